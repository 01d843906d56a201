// Tests on a real node (kubelet + containerd; root, one node per machine): each file starts its
// own control plane with `node: true`. `npm run e2e:node`; `npm run e2e:installed` runs these first.
const preset = require('./jest.preset.cjs');

module.exports = {
  ...preset,
  rootDir: __dirname,
  testMatch: ['<rootDir>/e2e/**/*.node.test.ts'],
  testPathIgnorePatterns: ['/node_modules/', '/dist/'],
  maxWorkers: 1,
  testTimeout: 900000,
};
