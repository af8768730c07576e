/**
 * The full part of `npm run test:stack`: each variant of the stack (VARIANTS) synthesized and run from its cloud
 * assembly (bin/run-stack.ts), then the HTTP suites that hold against any deployment pointed at it through
 * TEST_BASE_URL and TEST_TOKENS, as scripts/test-localstack.sh points them at LocalStack. Fails on a failing suite,
 * on any call a function's role refused, and on any wiring error. Figures are printed as `[stack-suites]` lines.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { synthesizeCloudAssembly } from '../lib/stack-check/cloud-assembly';
import { RUN_DIR_VARIABLE } from '../test/helpers/openapi-check';
import { checkedUnder } from '../test/helpers/openapi-check-global';
import { startStackProcess } from '../test/helpers/stack-process';

/** Suites that need nothing of the local runtime (its data folder, its clock, its worker): LocalStack runs the same. */
const DEFAULT_SUITES = (
  JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'test', 'stack-suites.json'), 'utf8')) as { suites: string[] }
).suites;
/** STACK_SUITES (comma-separated paths) runs other suites instead. */
const SUITES = process.env.STACK_SUITES ? process.env.STACK_SUITES.split(',').filter(Boolean) : DEFAULT_SUITES;

/** The access matrix also needs upload URLs that run out within the test: a second stack, made with a 1 s lifetime. */
const SHORT_UPLOAD_TTL_SECONDS = 1;

/** The API suites send bursts (many uploads at once): a limit they do not reach; the limit has its own suite. */
const SUITE_RATE_LIMIT = { rateLimitPerSecond: '1000000', rateLimitBurst: '1000000' };

/**
 * The variants run: `dynamodb` (the chunk table index, as on LocalStack) and `bedrock`, the knowledge index a plain
 * `cdk deploy` deploys, whose knowledge bases are the Bedrock stand-in's (bedrock-stand-in.ts), every request checked
 * against the documented constraints and the calling function's role. STACK_VARIANTS (comma-separated) runs fewer.
 * Both with `models=offline`: the suites assert the offline model's answers (test/stack/bedrock-run.test.ts runs the
 * default model and a `models` list through the stand-in's Converse).
 */
const VARIANTS: Record<string, Record<string, string>> = {
  dynamodb: { knowledgeIndex: 'dynamodb', models: 'offline' },
  bedrock: { models: 'offline' },
};
const RUN_VARIANTS = process.env.STACK_VARIANTS
  ? process.env.STACK_VARIANTS.split(',').filter(Boolean)
  : Object.keys(VARIANTS);

async function main(): Promise<number> {
  let status = 0;
  for (const variant of RUN_VARIANTS) {
    const context = VARIANTS[variant];
    if (!context) throw new Error(`unknown variant ${variant}: expected ${Object.keys(VARIANTS).join(' or ')}`);
    if ((await runVariant(variant, context)) !== 0) status = 1;
  }
  return status;
}

async function runVariant(variant: string, variantContext: Record<string, string>): Promise<number> {
  const started = Date.now();
  const workdir = fs.mkdtempSync(path.join(os.tmpdir(), 'stack-suites-'));
  const say = (line: string) => console.log(`[stack-suites] ${variant}: ${line}`);
  try {
    const assembly = synthesizeCloudAssembly(path.join(workdir, 'cdk.out'), {
      ...variantContext,
      ...SUITE_RATE_LIMIT,
      // The access matrix signs people up, as the local runtime (open) lets it.
      signUp: 'open',
    });
    // `-c uploadUrlTtlSeconds` changes one variable of the functions and no code: the same bundles, that variable
    // set in a copy of the template, instead of bundling every function a second time.
    const shortTtlTemplate = structuredClone(assembly.template);
    let ttlVariables = 0;
    for (const resource of Object.values(shortTtlTemplate.Resources)) {
      const variables = (resource.Properties?.Environment as { Variables?: Record<string, unknown> } | undefined)
        ?.Variables;
      if (resource.Type !== 'AWS::Lambda::Function' || !variables || !('UPLOAD_URL_TTL_SECONDS' in variables)) continue;
      variables.UPLOAD_URL_TTL_SECONDS = String(SHORT_UPLOAD_TTL_SECONDS);
      ttlVariables += 1;
    }
    if (ttlVariables === 0) throw new Error('no function of the template reads UPLOAD_URL_TTL_SECONDS');
    const shortTtlFile = path.join(workdir, 'short-ttl.template.json');
    fs.writeFileSync(shortTtlFile, JSON.stringify(shortTtlTemplate));
    const [stack, shortTtl] = await Promise.all([
      startStackProcess(assembly.directory),
      startStackProcess(assembly.directory, shortTtlFile),
    ]);
    let status = 1;
    try {
      const jest = spawnSync('npx', ['jest', ...SUITES, '--runInBand'], {
        stdio: 'inherit',
        env: {
          ...process.env,
          TEST_BASE_URL: stack.baseUrl,
          TEST_TOKENS: `${stack.token},${stack.otherToken}`,
          // The people the access matrix needs: the user pool, and the owner of the first token's organization.
          TEST_PEOPLE: JSON.stringify({
            pool: stack.people,
            owner: { email: stack.owner.email, password: stack.owner.password },
          }),
          [`TEST_BASE_URL_UPLOAD_TTL_${SHORT_UPLOAD_TTL_SECONDS}`]: shortTtl.baseUrl,
          [`TEST_TOKENS_UPLOAD_TTL_${SHORT_UPLOAD_TTL_SECONDS}`]: `${shortTtl.token},${shortTtl.otherToken}`,
        },
      });
      const reports = [await stack.report(), await shortTtl.report()];
      const sum = (pick: (r: (typeof reports)[number]) => number) => reports.reduce((n, r) => n + pick(r), 0);
      const invocations = sum((r) => Object.values(r.invocations).reduce((n, i) => n + i, 0));
      const denials = reports.flatMap((r) => r.denials);
      const wiringErrors = reports.flatMap((r) => r.wiringErrors);
      say(
        `${SUITES.length} suites ${jest.status === 0 ? 'passed' : 'FAILED'} through the synthesized ` +
          `stack: ${reports[0].functionsRun} of ${reports[0].functions} functions run (${invocations} invocations, ` +
          `the short-TTL stack's included), ${sum((r) => r.callsChecked)} AWS calls checked against their roles, ` +
          `${denials.length} refused, ${wiringErrors.length} wiring errors, ${Math.round((Date.now() - started) / 1000)} s`,
      );
      say(`not run: ${reports[0].notRun.join(', ') || 'none'}`);
      for (const denial of denials) say(`AccessDenied ${JSON.stringify(denial)}`);
      for (const error of wiringErrors) say(`wiring: ${error}`);
      const bedrockRequests = reports.flatMap((r) => Object.entries(r.bedrock.requests));
      const violations = reports.flatMap((r) => r.bedrock.violations);
      if (bedrockRequests.length > 0) {
        say(
          `Bedrock stand-in: ${bedrockRequests.map(([request, n]) => `${request} ×${n}`).join(', ')}; ` +
            `${violations.length} documented constraints broken`,
        );
      }
      for (const violation of violations) say(`Bedrock constraint broken: ${JSON.stringify(violation)}`);
      status =
        jest.status === 0 && denials.length === 0 && wiringErrors.length === 0 && violations.length === 0 ? 0 : 1;
    } finally {
      // Each stop throws the answers its API Gateway gave that the OpenAPI document does not admit.
      await Promise.all([stack.stop(), shortTtl.stop()]);
      const checkDir = process.env[RUN_DIR_VARIABLE];
      if (checkDir) say(`openapi-check: ${checkedUnder(checkDir).checked} answers of the stacks' API Gateways checked`);
    }
    return status;
  } finally {
    fs.rmSync(workdir, { recursive: true, force: true });
  }
}

main().then(
  (status) => process.exit(status),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
