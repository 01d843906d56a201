// @sandbox-scale/sdk/testing: helpers for tests of what moves files with the SDK (a local tree
// written from a spec, and described for comparison). Tests only: the lint rules refuse this
// entry point anywhere else.
export { describeTree } from './describe-tree';
export { writeTree } from './write-tree';
export type { TreeNode } from './write-tree';
