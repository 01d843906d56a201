// @sandbox-scale/kube-runtime/testing: helpers for tests of code built on the runtime. Tests
// only (the lint rules refuse this entry point anywhere else).
export { FakeClock, settle } from './fake-clock';
export { captureLog } from './capture-log';
