// Unit tests only; *.int.test.ts run from the root jest.int.config.cjs against the real control plane.
module.exports = {
  ...require('../jest.preset.cjs'),
  displayName: 'e2e',
  rootDir: __dirname,
  testMatch: ['<rootDir>/src/**/*.test.ts', '<rootDir>/test/**/*.test.ts'],
  testPathIgnorePatterns: [
    '/node_modules/',
    '\\.int\\.test\\.ts$',
    '\\.e2e\\.test\\.ts$',
    '\\.node\\.test\\.ts$',
    '\\.installed\\.test\\.ts$',
  ],
};
