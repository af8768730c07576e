/** Unit, API and infrastructure tests. TypeScript is compiled by SWC; `tsc --noEmit` type-checks in `npm test`. */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022' } }] },
  testTimeout: 60000,
  maxWorkers: 2,
};
