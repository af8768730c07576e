#!/usr/bin/env node
// aps runs from its TypeScript sources through tsx, with the typed client resolved to its sources as well
// (clients/cli/tsconfig.json `paths`): nothing to build before `npx aps`.
const { join } = require('node:path');

process.env.TSX_TSCONFIG_PATH = process.env.TSX_TSCONFIG_PATH || join(__dirname, '..', 'tsconfig.json');
require('tsx/cjs/api').register();
require('../src/main.ts')
  .main(process.argv)
  .then(
    (code) => {
      process.exitCode = code;
    },
    (error) => {
      console.error(error);
      process.exitCode = 1;
    },
  );
