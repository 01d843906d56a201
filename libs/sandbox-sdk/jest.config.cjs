// Unit tests only; *.int.test.ts run from the root jest.int.config.cjs against the running system.
module.exports = {
  ...require('../../jest.preset.cjs'),
  displayName: 'sandbox-sdk',
  rootDir: __dirname,
  testMatch: ['<rootDir>/src/**/*.test.ts', '<rootDir>/test/**/*.test.ts'],
  testPathIgnorePatterns: ['/node_modules/', '\\.int\\.test\\.ts$', '\\.e2e\\.test\\.ts$'],
};
