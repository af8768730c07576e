/**
 * `npm run diff -- <stage> [--deployed <template.json>]`: would deploying this checkout to the stage replace,
 * delete or leave behind a resource that holds data (lib/stateful-resources.ts)? Synthesizes the stage as `cdk
 * deploy -c stage=<stage>` would (its config/<stage>.json and cdk.json's context), reads the template CloudFormation
 * has for `agent-platform-<stage>` (or the file given), and exits 1 naming each such resource, 0 when there is none;
 * 2 when it cannot tell (no credentials, no such stack). Run it before every deploy of a stage with data
 * (docs/operations.md, "Deploy without losing data"); a CI job that deploys runs it first.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { CloudFormationClient, GetTemplateCommand } from '@aws-sdk/client-cloudformation';
import { createApp } from '../bin/app';
import { statefulLosses } from '../lib/stateful-resources';

const cdkJson = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'cdk.json'), 'utf8')) as {
  context: Record<string, unknown>;
};

/** The stack's own template as this checkout synthesizes it for `stage` (without bundling the functions). */
export function synthesizedTemplate(stage: string, context: Record<string, unknown> = {}): Record<string, unknown> {
  const outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'diff-gate-'));
  try {
    const { app, stack } = createApp({
      context: { ...cdkJson.context, 'aws:cdk:bundling-stacks': [], ...context, stage },
      outdir,
    });
    const assembly = app.synth();
    return assembly.getStackArtifact(stack.artifactId).template as Record<string, unknown>;
  } finally {
    fs.rmSync(outdir, { recursive: true, force: true });
  }
}

async function deployedTemplate(stage: string): Promise<Record<string, unknown>> {
  const client = new CloudFormationClient({});
  const answer = await client.send(
    new GetTemplateCommand({ StackName: `agent-platform-${stage}`, TemplateStage: 'Original' }),
  );
  if (!answer.TemplateBody) throw new Error(`stack agent-platform-${stage} has no template`);
  return JSON.parse(answer.TemplateBody) as Record<string, unknown>;
}

async function main(argv: string[]): Promise<number> {
  const [stage, flag, file] = argv;
  if (!stage || !/^[a-z][a-z0-9-]{0,19}$/.test(stage) || (flag !== undefined && (flag !== '--deployed' || !file))) {
    console.error('usage: npm run diff -- <stage> [--deployed <template.json>]');
    return 2;
  }
  let deployed: Record<string, unknown>;
  try {
    deployed = file
      ? (JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>)
      : await deployedTemplate(stage);
  } catch (error) {
    console.error(`Cannot read the deployed template of ${stage}: ${(error as Error).message}`);
    return 2;
  }
  const losses = statefulLosses(deployed, synthesizedTemplate(stage));
  if (losses.length === 0) {
    console.log(`agent-platform-${stage}: no resource that holds data would be replaced, deleted or orphaned`);
    return 0;
  }
  console.error(`agent-platform-${stage}: this deploy would lose data. Stateful resources it would change:`);
  for (const loss of losses) {
    const cause = loss.properties.length > 0 ? ` (changed: ${loss.properties.join(', ')})` : '';
    console.error(`  ${loss.impact.padEnd(12)} ${loss.logicalId} ${loss.type}${cause}`);
  }
  console.error('See docs/operations.md, "Deploy without losing data", before deploying anyway.');
  return 1;
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error: Error) => {
      console.error(error);
      process.exit(2);
    },
  );
}
