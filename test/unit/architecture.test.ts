/**
 * The dependency rules of docs/ARCHITECTURE.md ("Layers"), read from the import statements of lambdas/: no import
 * cycle among its modules (type-only imports included), the core and the ports free of AWS, of adapters, composition
 * roots and handlers, and lambdas/ reading lib/ only for the route table.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { RUNTIME_SDK_PACKAGES } from '../../lib/constructs/service-function';

const ROOT = resolve(__dirname, '..', '..');
const LAMBDAS = join(ROOT, 'lambdas');
const SUBPATHS = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).imports as Record<string, string>;
/** Every module specifier of a file: static imports and re-exports, dynamic imports, require. */
const SPECIFIER = /(?:\bfrom|\bimport|\brequire)\s*\(?\s*['"]([^'"]+)['"]/g;

function filesUnder(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) return filesUnder(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** The file a specifier names (relative or a package.json subpath import), or the bare package name. */
function target(from: string, specifier: string): string {
  for (const [pattern, replacement] of Object.entries(SUBPATHS)) {
    const prefix = pattern.slice(0, -1); // '#core/'
    if (specifier.startsWith(prefix)) {
      return join(ROOT, replacement.replace('*', specifier.slice(prefix.length)));
    }
  }
  if (!specifier.startsWith('.')) return specifier;
  const path = resolve(dirname(from), specifier);
  return existsSync(`${path}.ts`) ? `${path}.ts` : join(path, 'index.ts');
}

const files = filesUnder(LAMBDAS);
const imports = new Map(
  files.map((file) => [file, [...readFileSync(file, 'utf8').matchAll(SPECIFIER)].map((m) => target(file, m[1]))]),
);
const name = (file: string) => relative(ROOT, file);

it('reads every subpath import the code uses from package.json', () => {
  const missing = [...imports.entries()].flatMap(([file, targets]) =>
    targets.filter((t) => t.startsWith(ROOT) && !existsSync(t)).map((t) => `${name(file)} → ${name(t)}`),
  );
  expect(missing).toEqual([]);
  expect(files.length).toBeGreaterThan(150);
});

it('has no import cycle among the modules of lambdas/', () => {
  // Tarjan's strongly connected components; a component of more than one module is a cycle.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  let counter = 0;
  const visit = (v: string) => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const w of imports.get(v) ?? []) {
      if (!imports.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop() as string;
        onStack.delete(w);
        component.push(name(w));
      } while (w !== v);
      if (component.length > 1) cycles.push(component.sort());
    }
  };
  for (const file of files) if (!index.has(file)) visit(file);
  expect(cycles).toEqual([]);
});

it('keeps the core and the ports free of AWS, adapters, composition roots, handlers and lib/', () => {
  const inner = files.filter((f) => f.startsWith(join(LAMBDAS, 'core')) || f.startsWith(join(LAMBDAS, 'ports')));
  const outer = ['adapters', 'composition', 'handlers'].map((folder) => join(LAMBDAS, folder));
  const violations = inner.flatMap((file) =>
    (imports.get(file) ?? [])
      .filter(
        (t) =>
          /^@aws-sdk\/|^@aws-lambda-powertools\/|^aws-lambda$/.test(t) ||
          outer.some((folder) => t.startsWith(folder)) ||
          t.startsWith(join(ROOT, 'lib')),
      )
      .map((t) => `${name(file)} → ${t.startsWith(ROOT) ? name(t) : t}`),
  );
  expect(inner.length).toBeGreaterThan(60);
  expect(violations).toEqual([]);
});

it('reads lib/ only for the route table, and only from the HTTP plumbing and the OpenAPI handler', () => {
  const readers = files.filter((file) => (imports.get(file) ?? []).some((t) => t.startsWith(join(ROOT, 'lib'))));
  const targets = new Set(
    files.flatMap((file) => (imports.get(file) ?? []).filter((t) => t.startsWith(join(ROOT, 'lib')))).map(name),
  );
  expect(readers.map(name).sort()).toEqual(['lambdas/handlers/http/openapi-document.ts', 'lambdas/shared/http.ts']);
  expect([...targets]).toEqual(['lib/routes.ts']);
});

it('imports only AWS SDK packages whose bundling was decided (lib/constructs/service-function.ts)', () => {
  const decided = new Set<string>([...RUNTIME_SDK_PACKAGES, '@aws-sdk/client-bedrock-agent']);
  const used = new Set([...imports.values()].flat().filter((t) => t.startsWith('@aws-sdk/')));
  expect([...used].filter((p) => !decided.has(p))).toEqual([]);
  expect(used.has('@aws-sdk/client-bedrock-agent')).toBe(true);
});
