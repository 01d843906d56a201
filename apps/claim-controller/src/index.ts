// Public API of claim-controller: start it in-process (tests, benches, local runs) or via main.ts.
export { startClaimController } from './start-claim-controller';
export type { ClaimControllerHandle, ClaimControllerOptions } from './start-claim-controller';
export { ClaimControllerFlagsSchema } from './config';
export type { ClaimControllerFlags } from './config';
export { ClaimGateway, ReleaseTargetUnknownError } from './gateway/claim-gateway';
export type { ClaimGatewayOptions, GatewayClaimRequest, NodeDelivery } from './gateway/claim-gateway';
export { RecordQueue } from './record/record-queue';
export type { BoundRecorder, RecordQueueOptions } from './record/record-queue';
export type { Assignment, ClaimTarget } from './gateway/assignment';
export { OrphanReconciler } from './controllers/orphan-reconciler';
export type { OrphanPassResult } from './controllers/orphan-reconciler';
export { ClaimRecorder } from './record/claim-recorder';
export { FastPathRecorder } from './record/fast-path-recorder';
export { ClaimClient } from './record/claim-client';
export { SecretAccess, selfSubjectReviewer } from './record/secret-access';
export { createCaches, createOrphanPass, poolOfKey } from './wiring';
