/**
 * The artifacts a deploy uploads, checked from the synthesized cloud assembly (both knowledge index variants): every
 * Node.js function of the template loads from its asset folder on Node 22 in a process of its own with its template
 * environment, reads every variable the template gives it, and its package size is reported.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  loadHandler,
  mapLimited,
  packageSize,
  runtimeNodePath,
  unusedEnvironmentVariables,
} from '../../lib/stack-check/asset-checks';
import {
  type CloudAssembly,
  nodeFunctions,
  ResourceNames,
  resolvedEnvironment,
  synthesizeCloudAssembly,
  type TemplateFunction,
} from '../../lib/stack-check/cloud-assembly';

/** Minified handler file of an API function, source map aside: the budget of scripts/bundle-sizes.ts. */
const API_BUNDLE_BUDGET_BYTES = 300 * 1024;

const VARIANTS: Record<string, Record<string, string>> = {
  default: {},
  'knowledgeIndex=dynamodb': { knowledgeIndex: 'dynamodb' },
};

let workdir: string;
let nodePath: string;
const assemblies: Record<string, CloudAssembly> = {};

beforeAll(() => {
  workdir = fs.mkdtempSync(path.join(os.tmpdir(), 'stack-assets-'));
  nodePath = runtimeNodePath();
  for (const [name, context] of Object.entries(VARIANTS)) {
    assemblies[name] = synthesizeCloudAssembly(path.join(workdir, name.replace(/\W/g, '-')), context);
  }
}, 300_000);

afterAll(() => {
  fs.rmSync(workdir, { recursive: true, force: true });
  fs.rmSync(path.dirname(nodePath), { recursive: true, force: true });
});

/** A function of `assembly` whose template entry is changed by `edit`, the asset folder shared. */
function edited(fn: TemplateFunction, edit: Partial<TemplateFunction>): TemplateFunction {
  return { ...fn, ...edit };
}

describe.each(Object.keys(VARIANTS))('the %s stack', (variant) => {
  const functions = () => nodeFunctions(assemblies[variant]);
  const names = () => new ResourceNames(assemblies[variant].template);

  test('every Node.js function runs on nodejs22.x from an asset folder of the assembly', () => {
    expect(functions().length).toBeGreaterThan(30);
    for (const fn of functions()) {
      expect({ id: fn.logicalId, runtime: fn.runtime }).toEqual({ id: fn.logicalId, runtime: 'nodejs22.x' });
      expect(fs.existsSync(fn.assetDirectory)).toBe(true);
    }
  });

  test("every function's handler loads on Node 22 with its template environment and the runtime's NODE_PATH", async () => {
    const started = Date.now();
    const results = await mapLimited(functions(), 2, (fn) =>
      loadHandler(fn, resolvedEnvironment(fn, names()), nodePath),
    );
    console.log(
      `[stack] ${variant}: ${results.filter((r) => r.ok).length}/${results.length} handlers loaded on Node 22 in ` +
        `${Date.now() - started} ms`,
    );
    expect(results.filter((r) => !r.ok)).toEqual([]);
  }, 120_000);

  test('every variable of a function’s template environment is read by its bundle', () => {
    const unused = functions()
      .map((fn) => ({ fn: fn.logicalId, unused: unusedEnvironmentVariables(fn) }))
      .filter((r) => r.unused.length > 0);
    expect(unused).toEqual([]);
  });

  test(`every API function's handler file stays within ${API_BUNDLE_BUDGET_BYTES / 1024} KB`, () => {
    const sizes = functions().map((fn) => ({ fn: fn.logicalId, ...packageSize(fn) }));
    const lines = sizes
      .sort((a, b) => b.totalBytes - a.totalBytes)
      .map(
        (s) =>
          `  ${s.fn}: package ${(s.totalBytes / 1024).toFixed(0)} KB, handler ${(s.handlerBytes / 1024).toFixed(0)} KB`,
      );
    console.log(`[stack] ${variant}: package sizes (unzipped, source maps included)\n${lines.join('\n')}`);
    const overBudget = sizes.filter((s) => s.fn.startsWith('PlatformApi') && s.handlerBytes > API_BUNDLE_BUDGET_BYTES);
    expect(overBudget).toEqual([]);
  });
});

describe('what the checks catch (on a copy of a function entry)', () => {
  const uploadLink = () => {
    const fn = nodeFunctions(assemblies.default).find((f) => f.logicalId.startsWith('PlatformApiUploadLinkFunction'));
    if (!fn) throw new Error('no UploadLink function in the template');
    return fn;
  };
  const names = () => new ResourceNames(assemblies.default.template);

  test('a handler path typo fails to load, naming the function', async () => {
    const fn = edited(uploadLink(), { handler: 'indx.handler' });
    const result = await loadHandler(fn, resolvedEnvironment(fn, names()), nodePath);
    expect(result.ok).toBe(false);
    expect(result.error).toContain(fn.logicalId);
    expect(result.error).toContain('indx');
  });

  test('a wrong export name fails to load', async () => {
    const fn = edited(uploadLink(), { handler: 'index.main' });
    const result = await loadHandler(fn, resolvedEnvironment(fn, names()), nodePath);
    expect(result).toMatchObject({ ok: false, error: expect.stringContaining('export main is not a function') });
  });

  test('a bundle that needs a package neither bundled nor in the runtime fails to load', async () => {
    const dir = fs.mkdtempSync(path.join(workdir, 'asset-'));
    // Like a bundle built with a package marked external that Lambda's runtime does not have.
    fs.writeFileSync(path.join(dir, 'index.js'), "const z = require('zod'); exports.handler = async () => z;");
    const fn = edited(uploadLink(), { assetDirectory: dir });
    const result = await loadHandler(fn, {}, nodePath);
    expect(result).toMatchObject({ ok: false, error: expect.stringContaining("Cannot find module 'zod'") });
  });

  test('a variable the bundle never reads is reported', () => {
    const fn = edited(uploadLink(), { environment: { ...uploadLink().environment, UPLOAD_URL_TTL_SECOND: '900' } });
    expect(unusedEnvironmentVariables(fn)).toEqual(['UPLOAD_URL_TTL_SECOND']);
  });
});
