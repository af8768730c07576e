#!/usr/bin/env node
/**
 * Adds lockfile entries for platform-specific optional dependencies that npm left out.
 *
 * Why: the registry mirror these machines use serves only the packages of their own platform, so `npm install`
 * cannot record e.g. `@biomejs/cli-darwin-arm64` and `npm ci` then refuses the lockfile ("Missing: … from lock
 * file"). Each missing optional dependency gets an entry with its version and the os/cpu/libc its name states, so
 * `npm ci` skips it here by platform and a machine of that platform fetches it by version.
 * Run after changing dependencies: `npm run lock:complete`.
 */
import { readFileSync, writeFileSync } from 'node:fs';

const OS = ['android', 'darwin', 'linux', 'win32', 'freebsd', 'openbsd', 'netbsd', 'sunos', 'aix', 'openharmony'];
const CPU = ['arm64', 'x64', 'arm', 'ia32', 'ppc64', 's390x', 'riscv64', 'loong64', 'mips64el', 'wasm32', 'universal'];

function platformOf(name) {
  const parts = name.replace(/^@[^/]+\//, '').split(/[-_.]/);
  const os =
    parts.find((p) => OS.includes(p)) ?? (parts.includes('win') || parts.includes('windows') ? 'win32' : undefined);
  const cpu = parts.find((p) => CPU.includes(p)) ?? (parts.includes('x86') ? 'ia32' : undefined);
  const libc = parts.includes('musl') ? 'musl' : parts.includes('gnu') || parts.includes('glibc') ? 'glibc' : undefined;
  return { os, cpu: cpu === 'universal' ? undefined : cpu, libc };
}

const path = process.argv[2] ?? 'package-lock.json';
const lock = JSON.parse(readFileSync(path, 'utf8'));
const packages = lock.packages;
let added = 0;
for (const [location, entry] of Object.entries(packages)) {
  for (const [name, spec] of Object.entries(entry.optionalDependencies ?? {})) {
    const base = location === '' ? '' : `${location}/`;
    const nested = `${base}node_modules/${name}`;
    const hoisted = `node_modules/${name}`;
    if (packages[nested] || packages[hoisted]) continue;
    const { os, cpu, libc } = platformOf(name);
    if (!os && !cpu) continue; // not a platform package: leave it to npm
    packages[hoisted] = {
      version: spec.replace(/^[\^~=]/, ''),
      ...(cpu ? { cpu: [cpu] } : {}),
      ...(libc && os === 'linux' ? { libc: [libc] } : {}),
      ...(entry.dev ? { dev: true } : {}),
      optional: true,
      ...(os ? { os: [os] } : {}),
    };
    added += 1;
  }
}
lock.packages = Object.fromEntries(
  Object.entries(packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))),
);
writeFileSync(path, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`complete-lockfile: added ${added} platform entries to ${path}`);
