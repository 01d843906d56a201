// Public API of the warmpool-driver app (for in-process tests and benches).
export { WarmpoolDriverFlagsSchema } from './config';
export type { WarmpoolDriverFlags } from './config';
export { SYNC_REQUEST, WarmPoolReconciler } from './controllers/warmpool-reconciler';
export type { WarmPoolReconcilerOptions } from './controllers/warmpool-reconciler';
export { POOL_REASONS, desiredPoolStatus, invalidPoolStatus, statusDiffers } from './controllers/pool-status';
export { routableNodes } from './controllers/fleet-view';
export { parseWarmPool } from './parse-pool';
export { NodeInventoryResource, SandboxTemplateResource, SandboxWarmPoolResource } from './resources';
export { planTargets, spreadReplicas } from './targets/plan-targets';
export type { HeldPool, NodePoolSpec, PlanNode, SpreadPool, TargetPlan } from './targets/plan-targets';
export { needsRepush, sameTargets, targetsByKey } from './targets/node-drift';
export type { DriftInput } from './targets/node-drift';
export { TargetPusher } from './targets/push-targets';
export type { PushResult, PushTarget } from './targets/push-targets';
export { startDriver } from './start-driver';
export type { RunningDriver, StartDriverOptions } from './start-driver';
