/** `npm run build:web`: the console into web/dist (lib/local/console-build.ts); `--if-missing` keeps a build there. */
import { buildConsole, WEB_DIST } from '../lib/local/console-build';

buildConsole({ force: !process.argv.includes('--if-missing') }).then(
  (outcome) => console.log(outcome === 'built' ? `built ${WEB_DIST}` : `${WEB_DIST} is there`),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
