/**
 * Static checks of the functions a deploy uploads, run on the asset folders of the cloud assembly: the handler file
 * loads on Node 22 in a process of its own, as Lambda loads it (its template environment, the runtime's NODE_PATH
 * with only the AWS SDK on it), every environment variable the template gives a function is read by its bundle,
 * and each package's size.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { SYNTHETIC_REGION, type TemplateFunction } from './cloud-assembly';

const REPO_ROOT = path.resolve(__dirname, '..', '..');

/** The Node 22 binary of the `node` devDependency: the runtime's major version (nodejs22.x). */
export const NODE22 = path.join(REPO_ROOT, 'node_modules', '.bin', 'node');

/**
 * Variables the function's own code need not read, because something else does: Node reads NODE_OPTIONS at start.
 * Everything else in a function's Environment must appear in its bundle.
 */
const READ_OUTSIDE_THE_BUNDLE: Readonly<Record<string, string>> = {
  NODE_OPTIONS: 'read by Node itself when the process starts',
};

/**
 * A folder standing for the runtime's /var/runtime/node_modules: only `@aws-sdk` (the bundles leave it out, as
 * BUNDLING.externalModules says), linked to this repository's copy, so a bundle that needs any other package it
 * did not bundle fails to load here as it would in Lambda.
 */
export function runtimeNodePath(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lambda-runtime-'));
  fs.mkdirSync(path.join(dir, 'node_modules'));
  fs.symlinkSync(path.join(REPO_ROOT, 'node_modules', '@aws-sdk'), path.join(dir, 'node_modules', '@aws-sdk'));
  return path.join(dir, 'node_modules');
}

/** The variables Lambda sets for every function, besides those of its template. */
export function lambdaRuntimeEnvironment(fn: TemplateFunction, nodePath: string): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    AWS_REGION: SYNTHETIC_REGION,
    AWS_DEFAULT_REGION: SYNTHETIC_REGION,
    AWS_LAMBDA_FUNCTION_NAME: fn.logicalId,
    AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(fn.memorySize),
    AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
    AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs22.x',
    LAMBDA_TASK_ROOT: fn.assetDirectory,
    NODE_PATH: nodePath,
    TZ: ':UTC',
    // The role's temporary credentials in Lambda; here a placeholder the loading code may read.
    AWS_ACCESS_KEY_ID: 'ASIASTACKCHECK',
    AWS_SECRET_ACCESS_KEY: 'stack-check',
    AWS_SESSION_TOKEN: 'stack-check',
  };
}

/** `index.handler` → the file Lambda loads and the name it calls. */
export function handlerEntry(fn: TemplateFunction): { file: string; exportName: string } {
  const dot = fn.handler.lastIndexOf('.');
  if (dot <= 0) throw new Error(`${fn.logicalId}: Handler ${fn.handler} is not <file>.<export>`);
  const base = path.join(fn.assetDirectory, fn.handler.slice(0, dot));
  const file = ['.js', '.cjs', '.mjs'].map((ext) => base + ext).find((f) => fs.existsSync(f));
  if (!file) throw new Error(`${fn.logicalId}: no ${fn.handler.slice(0, dot)}.js|.cjs|.mjs in ${fn.assetDirectory}`);
  return { file, exportName: fn.handler.slice(dot + 1) };
}

export interface LoadResult {
  readonly logicalId: string;
  readonly ok: boolean;
  /** Why it did not load: the child's error output. */
  readonly error: string;
  readonly milliseconds: number;
}

/**
 * Loads the handler module in a Node 22 child with the function's environment (template variables resolved) and
 * checks that the named export is a function: a missing file, a package left out of the bundle, a native module for
 * another platform, or module-level code that throws, fail here.
 */
export function loadHandler(
  fn: TemplateFunction,
  environment: Record<string, string>,
  nodePath: string,
): Promise<LoadResult> {
  const started = Date.now();
  let entry: { file: string; exportName: string };
  try {
    entry = handlerEntry(fn);
  } catch (error) {
    return Promise.resolve({ logicalId: fn.logicalId, ok: false, error: String(error), milliseconds: 0 });
  }
  const script =
    `import(${JSON.stringify(`file://${entry.file}`)}).then((m) => {` +
    ` const h = m[${JSON.stringify(entry.exportName)}] ?? m.default?.[${JSON.stringify(entry.exportName)}];` +
    ` if (typeof h !== 'function') { console.error('export ${entry.exportName} is not a function'); process.exit(3); }` +
    ` process.exit(0); }, (e) => { console.error(e && e.stack || String(e)); process.exit(2); });`;
  return new Promise((resolve) => {
    const child = spawn(NODE22, ['-e', script], {
      cwd: fn.assetDirectory,
      env: { ...lambdaRuntimeEnvironment(fn, nodePath), ...environment },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({
        logicalId: fn.logicalId,
        ok: code === 0,
        error: code === 0 ? '' : `exit ${code ?? signal}: ${stderr.trim().slice(0, 2000)}`,
        milliseconds: Date.now() - started,
      });
    });
  });
}

/** Variables of the function's template Environment that no code of its bundle mentions. */
export function unusedEnvironmentVariables(fn: TemplateFunction): string[] {
  const bundle = fs.readFileSync(handlerEntry(fn).file, 'utf8');
  return Object.keys(fn.environment).filter(
    (name) => !(name in READ_OUTSIDE_THE_BUNDLE) && !new RegExp(`\\b${name}\\b`).test(bundle),
  );
}

/** Bytes of the asset folder (what the deploy zips), and of its handler file alone. */
export function packageSize(fn: TemplateFunction): { totalBytes: number; handlerBytes: number } {
  const walk = (dir: string): number =>
    fs.readdirSync(dir, { withFileTypes: true }).reduce((sum, entry) => {
      const full = path.join(dir, entry.name);
      return sum + (entry.isDirectory() ? walk(full) : entry.isFile() ? fs.statSync(full).size : 0);
    }, 0);
  return { totalBytes: walk(fn.assetDirectory), handlerBytes: fs.statSync(handlerEntry(fn).file).size };
}
