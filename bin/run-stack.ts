/**
 * Runs the synthesized stack of a cloud assembly on this machine (lib/stack-check/stack-runner.ts) until stdin
 * closes: `tsx bin/run-stack.ts <cdk.out> [--template <file>]`. Prints one line `@@stack {"ready":{baseUrl,token}}`
 * when it serves (token and otherToken: two new organizations with every scope; owner: a person who owns token's,
 * signed in; people: the user pool), and for each `report` line read on stdin one
 * line `@@stack {"report":{...}}`: the calls checked, the calls refused, wiring errors and each function's output;
 * for each `replay <template file>` line one `@@stack {"replay":[...]}`: the calls made so far that the roles of
 * that template (a mutation of this one) would refuse; for each `fire` line one `@@stack {"fired":[...]}`: every
 * scheduled rule and schedule invoked now. STACK_CHECK_EXTERNAL_FUNCTIONS (JSON: function ARN → URL) serves Lambda
 * functions outside the stack, such as a customer's agent code.
 * test/stack/run.test.ts drives it; jest itself cannot load the ES-module-only SQS engine.
 */
import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as readline from 'node:readline';
import { type CfnTemplate, readCloudAssembly } from '../lib/stack-check/cloud-assembly';
import { runStack } from '../lib/stack-check/stack-runner';

const SCOPES = ['dashboard', 'knowledge-management', 'analytics', 'webhook'];

async function main(): Promise<void> {
  const [directory, flag, templateFile] = process.argv.slice(2);
  if (!directory || (flag !== undefined && (flag !== '--template' || !templateFile))) {
    throw new Error('usage: tsx bin/run-stack.ts <cdk.out> [--template <file>]');
  }
  const assembly = readCloudAssembly(directory);
  const template = templateFile
    ? (JSON.parse(fs.readFileSync(templateFile, 'utf8')) as CfnTemplate)
    : assembly.template;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'run-stack-'));
  // Functions outside the stack that its functions invoke (a customer's agent code): ARN → the URL serving each.
  const external = process.env.STACK_CHECK_EXTERNAL_FUNCTIONS;
  const stack = await runStack(
    { ...assembly, template },
    { dataDir, externalFunctions: external ? (JSON.parse(external) as Record<string, string>) : undefined },
  );
  // Two organizations, as the HTTP suites' TEST_TOKENS want them.
  const organizationId = randomUUID();
  const token = await stack.createToken(SCOPES, organizationId);
  const otherToken = await stack.createToken(SCOPES);
  // The first organization's owner signed in: people are managed by people (docs/people.md).
  const email = 'owner@stack-check.example.com';
  const password = 'Stack-owner-1';
  const owner = { ...(await stack.createOwner(email, password, organizationId)), email, password };
  const say = (value: unknown) => process.stdout.write(`@@stack ${JSON.stringify(value)}\n`);
  say({
    ready: {
      baseUrl: stack.baseUrl,
      token,
      otherToken,
      owner,
      people: stack.people,
      secretsEndpoint: stack.secrets.endpoint,
    },
  });

  const stop = async () => {
    await stack.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop());
  const lines = readline.createInterface({ input: process.stdin });
  lines.on('line', (line) => {
    const replay = /^replay (.+)$/.exec(line.trim());
    if (replay) {
      const mutated = JSON.parse(fs.readFileSync(replay[1], 'utf8')) as CfnTemplate;
      stack.replay(mutated).then(
        (refused) =>
          say({ replay: refused.map((e) => ({ functionId: e.functionId, action: e.action, resource: e.resource })) }),
        (error: unknown) => say({ replay: { error: String(error) } }),
      );
      return;
    }
    if (line.trim() === 'fire') {
      stack.fireSchedules().then(
        (fired) => say({ fired }),
        (error: unknown) => say({ fired: { error: String(error) } }),
      );
      return;
    }
    if (line.trim() !== 'report') return;
    const hosts = [...stack.hosts.values()];
    say({
      report: {
        functions: hosts.length,
        functionsRun: hosts.filter((h) => h.invocations > 0).length,
        notRun: hosts.filter((h) => h.invocations === 0).map((h) => h.fn.logicalId),
        invocations: Object.fromEntries(
          hosts.filter((h) => h.invocations > 0).map((h) => [h.fn.logicalId, h.invocations]),
        ),
        callsChecked: stack.callsChecked(),
        denials: stack.denials().map((e) => ({ functionId: e.functionId, action: e.action, resource: e.resource })),
        wiringErrors: stack.wiringErrors,
        bedrock: {
          requests: stack.bedrock.requests.reduce<Record<string, number>>((counts, r) => {
            const key = `${r.operation ?? `${r.method} ${r.path}`} ${r.status}`;
            counts[key] = (counts[key] ?? 0) + 1;
            return counts;
          }, {}),
          violations: stack.bedrock.violations,
        },
        secrets: stack.secrets.requests.reduce<Record<string, number>>((counts, r) => {
          const key = `${r.operation} ${r.status}`;
          counts[key] = (counts[key] ?? 0) + 1;
          return counts;
        }, {}),
        output: Object.fromEntries(hosts.filter((h) => h.output()).map((h) => [h.fn.logicalId, h.output()])),
      },
    });
  });
  lines.on('close', () => void stop());
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
