// @sandbox-scale/kube-runtime/testing: helpers for tests of code built on the runtime (manual
// time, a captured log, an in-memory Lease, a scripted list/watch, leader-election flags, RBAC
// grants to a ServiceAccount). Tests only: the lint rules refuse this entry point anywhere else.
export { FakeClock, settle } from './fake-clock';
export { captureLog } from './capture-log';
export { MemoryLease } from './memory-lease';
export { FakeListWatcher } from './fake-list-watcher';
export { leaderElectionArgs } from './leader-args';
export { bindServiceAccount, grantRole, type ServiceAccountRef } from './rbac-grant';
