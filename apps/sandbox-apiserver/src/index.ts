export { startSandboxApiserver } from './server';
export type { RunningSandboxApiserver, SandboxApiserverConfig } from './server';
export { SandboxApiserverFlagsSchema, configFromFlags } from './config';
export type { SandboxApiserverFlags, SandboxApiserverInputs } from './config';
export { apiResourceList } from './discovery';
