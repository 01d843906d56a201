// Shared jest settings: CommonJS via swc, with the ESM-only dependencies transpiled too.
const esmDeps = ['p-queue', 'p-timeout', 'eventemitter3', '@kubernetes/client-node', 'openid-client', 'oauth4webapi', 'jose', 'selfsigned', '@peculiar', 'pkijs', 'asn1js', 'pvtsutils', 'pvutils', 'bytestreamjs'];

module.exports = {
  testEnvironment: 'node',
  transform: {
    '^.+\\.(t|j|mj|cj)s$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs' } }],
  },
  transformIgnorePatterns: [`/node_modules/(?!(${esmDeps.join('|')})/)`],
  moduleFileExtensions: ['ts', 'js', 'mjs', 'cjs', 'json'],
};
