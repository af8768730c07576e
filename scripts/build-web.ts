/**
 * `npm run build:web`: the console into web/dist (lib/local/console-build.ts); `--if-missing` keeps a build there;
 * `--out <dir>` builds into that folder instead (the stack's console asset, lib/constructs/console-site.ts).
 */
import { buildConsole, buildConsoleTo, WEB_DIST } from '../lib/local/console-build';

const out = process.argv.indexOf('--out');
const run =
  out >= 0 && process.argv[out + 1]
    ? buildConsoleTo(process.argv[out + 1]).then(() => `built ${process.argv[out + 1]}`)
    : buildConsole({ force: !process.argv.includes('--if-missing') }).then((outcome) =>
        outcome === 'built' ? `built ${WEB_DIST}` : `${WEB_DIST} is there`,
      );
run.then(
  (message) => console.log(message),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
