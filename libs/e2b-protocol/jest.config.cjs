// Unit tests only: the protocol is pure; the SDKs drive it end to end from the e2e suites.
module.exports = {
  ...require('../../jest.preset.cjs'),
  displayName: 'e2b-protocol',
  rootDir: __dirname,
  testMatch: ['<rootDir>/src/**/*.test.ts'],
};
