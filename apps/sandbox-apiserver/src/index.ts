export { startSandboxApiserver } from './server';
export type { RunningSandboxApiserver, SandboxApiserverConfig } from './server';
export { ConfigSchema, configFromFlags } from './config';
export type { Flags } from './config';
export { apiResourceList } from './discovery';
