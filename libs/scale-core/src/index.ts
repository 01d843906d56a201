export * from './errors/base';
