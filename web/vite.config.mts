/**
 * The console's build (docs/console.md): `npm run build:web` writes web/dist, which `npm start` serves at `/`;
 * `npm run dev:web` serves it with hot reload and sends the API's paths to the running local runtime (API_URL,
 * default http://127.0.0.1:4000). The manifest lets the bundle budget test weigh the first screen.
 */
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const api = process.env.API_URL ?? 'http://127.0.0.1:4000';

export default defineConfig(({ command }) => ({
  root: fileURLToPath(new URL('.', import.meta.url)),
  // A build is React's production build whatever NODE_ENV the building process has: jest sets `test`, which Vite
  // would otherwise write into the bundle, and React's development build is a third heavier (checked in CI: 302 KB).
  ...(command === 'build' ? { define: { 'process.env.NODE_ENV': JSON.stringify('production') } } : {}),
  // JSX by Vite's own transformer (React's automatic runtime): @vitejs/plugin-react adds only Fast Refresh, and its
  // optional Babel peers do not resolve beside jest's Babel (npm ERESOLVE); without it, a change reloads the page.
  // The production JSX transform for a build, for the same reason as `define` above (under NODE_ENV=test Vite picks
  // the development one, whose jsxDEV React's production build does not have).
  oxc: { jsx: { runtime: 'automatic', development: command !== 'build' } },
  build: {
    outDir: process.env.WEB_OUT_DIR ?? 'dist',
    emptyOutDir: true,
    manifest: true,
    sourcemap: false,
    // Minified size; what counts is the first screen's gzip weight, which test/web/console.test.ts holds to 300 KB.
    chunkSizeWarningLimit: 800,
    rolldownOptions: {
      // Mantine marks its modules "use client" (for React Server Components); a browser bundle has no server side.
      onwarn(warning, warn) {
        if (warning.code !== 'MODULE_LEVEL_DIRECTIVE') warn(warning);
      },
    },
  },
  server: {
    proxy: { '/api': api, '/dashboard': api, '/config.json': api, '/health': api },
  },
}));
