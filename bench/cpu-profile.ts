/**
 * A CPU profile of part of a benchmark (node:inspector's Profiler, the same sampler as `node --cpu-prof`), summed by
 * self time per module: where the CPU of a load goes, so the next person sees the same picture (bench/load.ts).
 *
 * A module is a package under node_modules (its scope included), a file of this repository's lib/local (the local
 * runtime: router, SigV4 checks, transactions), the service's own code by layer (lambdas/<layer>), or Node's own
 * (`node:` internals, the garbage collector, `(program)`: native code outside JavaScript).
 */
import { Session } from 'node:inspector/promises';
import { relative, resolve, sep } from 'node:path';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly url: string; readonly functionName: string };
}

export interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

export interface ModuleTime {
  readonly module: string;
  /** Self time of the module's functions, in ms. */
  readonly ms: number;
  /** Its share of the profile's busy time (idle excluded). */
  readonly share: number;
}

const ROOT = resolve(__dirname, '..');

/** The module a call frame's script belongs to. */
export function moduleOf(url: string, functionName: string): string {
  if (!url) {
    if (functionName === '(garbage collector)') return 'node: garbage collector';
    if (functionName === '(idle)') return '(idle)';
    if (functionName === '(program)') return 'node: native (program)';
    return `node: ${functionName || 'native'}`;
  }
  if (url.startsWith('node:')) {
    const name = url.slice('node:'.length).replace(/^internal\//, '');
    const first = name.split('/')[0];
    return `node: ${first}`;
  }
  const path = url.startsWith('file://') ? decodeURIComponent(new URL(url).pathname) : url;
  const modules = path.lastIndexOf(`${sep}node_modules${sep}`);
  if (modules >= 0) {
    const parts = path.slice(modules + '/node_modules/'.length).split(sep);
    return parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
  }
  const local = relative(ROOT, path);
  if (local.startsWith('..')) return path;
  const parts = local.split(sep);
  if (parts[0] === 'lib' && parts[1] === 'local') return `lib/local/${parts[2]}`;
  if (parts[0] === 'lambdas') return `lambdas/${parts[1]}`;
  if (parts[0] === 'bench') return 'bench (the load client)';
  return parts.slice(0, 2).join('/');
}

/** Self time per module, the largest first; `(idle)` is left out of the shares. */
export function summarize(profile: CpuProfile): ModuleTime[] {
  const byNode = new Map<number, string>();
  for (const node of profile.nodes) byNode.set(node.id, moduleOf(node.callFrame.url, node.callFrame.functionName));
  const totals = new Map<string, number>();
  for (let i = 0; i < profile.samples.length; i += 1) {
    const module = byNode.get(profile.samples[i]) ?? 'unknown';
    totals.set(module, (totals.get(module) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
  }
  totals.delete('(idle)');
  const busy = [...totals.values()].reduce((sum, ms) => sum + ms, 0);
  return [...totals]
    .map(([module, ms]) => ({ module, ms, share: busy === 0 ? 0 : ms / busy }))
    .sort((a, b) => b.ms - a.ms);
}

/** Runs `fn` under the sampling profiler of this process and answers its result with the profile. */
export async function profileWhile<T>(fn: () => Promise<T>): Promise<{ result: T; profile: CpuProfile }> {
  const session = new Session();
  session.connect();
  try {
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 500 });
    await session.post('Profiler.start');
    const result = await fn();
    const { profile } = (await session.post('Profiler.stop')) as { profile: CpuProfile };
    return { result, profile };
  } finally {
    session.disconnect();
  }
}

/** The summary as a Markdown table: the `top` largest modules, the rest in one row. */
export function renderModuleTable(title: string, modules: readonly ModuleTime[], top = 18): string {
  const lines = [`${title}`, '', '| module | self CPU | share |', '|---|---|---|'];
  for (const m of modules.slice(0, top))
    lines.push(`| ${m.module} | ${m.ms.toFixed(0)} ms | ${(m.share * 100).toFixed(1)} % |`);
  const rest = modules.slice(top);
  if (rest.length > 0) {
    const ms = rest.reduce((sum, m) => sum + m.ms, 0);
    const share = rest.reduce((sum, m) => sum + m.share, 0);
    lines.push(`| ${rest.length} others | ${ms.toFixed(0)} ms | ${(share * 100).toFixed(1)} % |`);
  }
  return lines.join('\n');
}
