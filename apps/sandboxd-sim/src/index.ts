export { startSim, type StartSimOptions, type Sim, type SimNode, type SimNodeInfo } from './fleet';
export { ManualClock, systemClock, settle, type Clock, type TimerHandle } from './clock';
export {
  SimOptionsSchema,
  NodeConfigSchema,
  TenantSchema,
  SimPoolSchema,
  type SimOptions,
  type SimOptionsInput,
  type NodeConfig,
  type NodeConfigInput,
  type Tenant,
  type SimPool,
} from './config';
export { FaultsSchema, VERBS, MALFORMED_MODES, type Faults, type FaultsInput, type Verb, type MalformedMode } from './faults';
export { LatencyProfileSchema, type LatencyProfile, type LatencyProfileInput } from './latency';
export type { NodeState } from './node-state';
export type { ClaimOutcome } from './claim-ops';
export { GUEST_RUNTIME_PORT } from './data-plane/port-relay';
export { DATA_PLANE_DISABLED } from './data-plane/access';
