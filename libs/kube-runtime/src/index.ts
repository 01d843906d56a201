export * from './log/logger';
export * from './config/flags';
