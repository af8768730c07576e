/**
 * Builds the console (web/) into web/dist, atomically: into a folder of its own, then renamed into place, so a runtime
 * never serves half a build and builds that run at once do not mix (the first rename wins; the others are dropped).
 * `npm run build:web`; `npm start` runs it when web/dist is missing (lib/local/console.ts serves it).
 */
import { existsSync, renameSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';

const WEB = resolve(__dirname, '../../web');
export const WEB_DIST = join(WEB, 'dist');

/** `vite build` of the console into `outDir` (the stack's console asset builds into CDK's folder this way). */
export async function buildConsoleTo(outDir: string): Promise<void> {
  // Vite is ES modules only; its types need a module resolution this CommonJS project does not use.
  const { build } = (await import('vite' as string)) as {
    build(config: {
      configFile: string;
      logLevel: string;
      build: { outDir: string; emptyOutDir: boolean };
    }): Promise<unknown>;
  };
  await build({ configFile: join(WEB, 'vite.config.mts'), logLevel: 'warn', build: { outDir, emptyOutDir: true } });
}

export async function buildConsole(options: { force?: boolean } = {}): Promise<'built' | 'present'> {
  if (!options.force && existsSync(join(WEB_DIST, 'index.html'))) return 'present';
  const staging = join(WEB, `.dist-${process.pid}-${Date.now()}`);
  try {
    await buildConsoleTo(staging);
    if (options.force) rmSync(WEB_DIST, { recursive: true, force: true });
    try {
      renameSync(staging, WEB_DIST);
    } catch (error) {
      // Another build got there first: its copy stays.
      if (!existsSync(join(WEB_DIST, 'index.html'))) throw error;
    }
    return 'built';
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}
