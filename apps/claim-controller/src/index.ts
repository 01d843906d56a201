// Public API of claim-controller: start it in-process (tests, benches, local runs) or via main.ts.
export { startClaimController } from './start-claim-controller';
export type { ClaimControllerHandle, ClaimControllerOptions } from './start-claim-controller';
export { ClaimControllerFlagsSchema, loadFleetToken } from './config';
export type { ClaimControllerFlags } from './config';
export { ClaimGateway, ReleaseTargetUnknownError } from './gateway/claim-gateway';
export type { ClaimGatewayOptions, GatewayClaimRequest, NodeDelivery } from './gateway/claim-gateway';
export { RecordQueue } from './gateway/record-queue';
export type { RecordQueueOptions } from './gateway/record-queue';
export type { Assignment, BoundRecorder, ClaimTarget } from './gateway/assignment';
export { OrphanReconciler } from './controllers/orphan-reconciler';
export type { OrphanPassResult } from './controllers/orphan-reconciler';
export { ClaimRecorder } from './gateway/claim-recorder';
export { FastPathRecorder } from './gateway/fast-path-recorder';
export { ClaimWrites } from './controllers/claim-writes';
export { createCaches, poolOfKey } from './wiring';
