/**
 * s3rver, with its XML parser pinned to a fixed fast-xml-parser 4.x. s3rver 3.7.1 (unmaintained) asks for
 * fast-xml-parser 3, which has known prototype-pollution and entity-expansion flaws fixed in 4.x only. package.json's
 * `overrides` install 4.5.7 in its place, so no version 3 is on disk; version 4 lacks the API s3rver calls, so
 * s3rver's `require('fast-xml-parser')` is answered with `fast-xml-parser-v3-compat.cjs`, that API on 4.5.7.
 * Load s3rver through this module only.
 */
import Module from 'node:module';
import { dirname, sep } from 'node:path';
import type S3rverClass from 's3rver';

type Resolve = (request: string, parent: { filename?: string } | undefined, ...rest: unknown[]) => string;
const loader = Module as unknown as { _resolveFilename: Resolve };

const s3rverDirectory = `${dirname(require.resolve('s3rver/package.json'))}${sep}`;
const compat = require.resolve('./fast-xml-parser-v3-compat.cjs');
const resolve = loader._resolveFilename;
loader._resolveFilename = function (this: unknown, request, parent, ...rest) {
  if (request === 'fast-xml-parser' && parent?.filename?.startsWith(s3rverDirectory)) return compat;
  return resolve.call(this, request, parent, ...rest);
};

/** Whether s3rver's XML comes from the compat module (for the test that proves it). */
export function s3rverXmlParser(): string {
  return loader._resolveFilename('fast-xml-parser', { filename: `${s3rverDirectory}lib/s3rver.js` });
}

const S3rver: typeof S3rverClass = require('s3rver');
export default S3rver;
