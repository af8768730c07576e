/** Unit, API and infrastructure tests. TypeScript is compiled by SWC; `tsc --noEmit` type-checks in `npm test`. */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022' } }],
    // @middy/core and jose are ESM only; the handlers that tests import directly go through middy, and the
    // authorizer's ID token verifier through jose.
    '/node_modules/(@middy|jose)/.+\\.js$': ['@swc/jest', { jsc: { target: 'es2022' }, module: { type: 'commonjs' } }],
  },
  transformIgnorePatterns: ['/node_modules/(?!@middy/|jose/)'],
  testTimeout: 60000,
  // s3rver's XML parser, as lib/local/s3rver.ts gives it outside jest (jest resolves modules by itself).
  moduleNameMapper: {
    '^fast-xml-parser$': '<rootDir>/lib/local/fast-xml-parser-v3-compat.cjs',
    // The repository's own packages from their sources (examples/ imports them by name, as a customer would).
    '^@agent-platform/agent-sdk$': '<rootDir>/packages/agent-sdk/src',
  },
  maxWorkers: 2,
  // Every answer of every local runtime a suite starts is checked against the OpenAPI document; the teardown prints
  // how many (README, "Tests": "Every answer against the document").
  globalSetup: '<rootDir>/test/helpers/openapi-check-setup.ts',
  globalTeardown: '<rootDir>/test/helpers/openapi-check-teardown.ts',
};
