/**
 * The checks of what a deploy uploads, on the Node functions of one synthesized cloud assembly: each runs on
 * nodejs22.x from an asset folder, loads its handler on Node 22 in a process of its own with its template environment
 * and the runtime's NODE_PATH, reads every variable of its environment, and an API handler stays within 300 KB.
 * Defined by test/stack/assets.test.ts (default variant) and run.test.ts (knowledgeIndex=dynamodb), each of which
 * synthesizes its variant once.
 */
import * as fs from 'node:fs';
import { mapLimited } from '../../lib/map-limited';
import { loadHandler, packageSize, unusedEnvironmentVariables } from '../../lib/stack-check/asset-checks';
import {
  type CloudAssembly,
  nodeFunctions,
  ResourceNames,
  resolvedEnvironment,
} from '../../lib/stack-check/cloud-assembly';

/** Minified handler file of an API function, source map aside: the budget of scripts/bundle-sizes.ts. */
const API_BUNDLE_BUDGET_BYTES = 300 * 1024;

/** The functions API Gateway calls: each method's integration and the authorizer, wherever their stack put them. */
function apiFunctionIds(assembly: CloudAssembly): Set<string> {
  const ids = new Set<string>();
  for (const resource of Object.values(assembly.template.Resources)) {
    const target =
      resource.Type === 'AWS::ApiGateway::Method'
        ? (resource.Properties?.Integration as { Uri?: unknown } | undefined)?.Uri
        : resource.Type === 'AWS::ApiGateway::Authorizer'
          ? resource.Properties?.AuthorizerUri
          : undefined;
    for (const match of JSON.stringify(target ?? null).matchAll(/\{"Fn::GetAtt":\["(\w+)","Arn"\]\}/g))
      ids.add(match[1]);
  }
  return ids;
}

export function assetChecks(variant: string, assembly: () => CloudAssembly, nodePath: () => string): void {
  const functions = () => nodeFunctions(assembly());
  const names = () => new ResourceNames(assembly().template);

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
      loadHandler(fn, resolvedEnvironment(fn, names()), nodePath()),
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
    const api = apiFunctionIds(assembly());
    expect(api.size).toBeGreaterThan(30);
    expect(sizes.filter((s) => api.has(s.fn)).length).toBe(api.size);
    const overBudget = sizes.filter((s) => api.has(s.fn) && s.handlerBytes > API_BUNDLE_BUDGET_BYTES);
    expect(overBudget).toEqual([]);
  });
}
