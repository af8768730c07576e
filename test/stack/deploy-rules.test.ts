/**
 * The rules AWS enforces at deploy time (lib/stack-check/deploy-rules.ts) hold for both variants of the stack, and the
 * mutations of test/stack/mutations.ts that the template alone shows (deploy rules, template wiring) are each caught. The
 * mutations that need the functions run are applied in test/stack/run.test.ts.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CfnTemplate } from '../../lib/stack-check/cloud-assembly';
import { DEPLOY_RULES, deployRuleViolations } from '../../lib/stack-check/deploy-rules';
import type { AssemblyTemplate } from '../../lib/stack-check/nested-stacks';
import { engineNames } from '../../lib/stack-check/stack-runner';
import { synthesizeUnbundled } from '../helpers/synth';
import { MUTATIONS } from './mutations';

const templates: Record<string, CfnTemplate> = {};
/** Each variant's template files as synthesized: the stack's own and its nested stacks'. */
const files: Record<string, readonly AssemblyTemplate[]> = {};

beforeAll(() => {
  for (const [variant, context] of [
    ['default', {}],
    ['knowledgeIndex=dynamodb', { knowledgeIndex: 'dynamodb' }],
  ] as const) {
    const synthesized = synthesizeUnbundled(context);
    templates[variant] = synthesized.template.toJSON() as CfnTemplate;
    files[variant] = synthesized.templates;
    synthesized.dispose();
  }
}, 120_000);

test.each(['default', 'knowledgeIndex=dynamodb'])('the %s stack breaks none of the deploy rules', async (variant) => {
  expect(files[variant].length).toBeGreaterThan(1);
  expect(await deployRuleViolations(templates[variant], files[variant])).toEqual([]);
  expect(() => engineNames(templates[variant].Resources)).not.toThrow();
  console.log(
    `[deploy-rules] ${variant}: ${DEPLOY_RULES.length} rules hold: ${DEPLOY_RULES.map((r) => r.id).join(', ')}`,
  );
});

const STATIC = MUTATIONS.filter((m) => m.caughtBy === 'deploy rules' || m.caughtBy === 'template wiring');
const staticMessages = (template: CfnTemplate) =>
  deployRuleViolations(template).then((found) => {
    try {
      engineNames(template.Resources);
    } catch (error) {
      found.push(String((error as Error).message));
    }
    return found;
  });

describe.each(['default', 'knowledgeIndex=dynamodb'])('mutations of the %s stack', (variant) => {
  test.each(STATIC.map((m) => [m.id, m]))('%s is caught', async (_id, mutation) => {
    const copy = structuredClone(templates[variant]);
    mutation.apply(copy);
    const messages = await staticMessages(copy);
    expect(messages.some((m) => mutation.expected.test(m))).toBe(true);
  });

  test('the notification filter is read as the engines will apply it', () => {
    const mutation = MUTATIONS.find((m) => m.id === 'notification-filtered-to-an-unused-prefix');
    if (!mutation) throw new Error('the filter mutation is gone');
    const copy = structuredClone(templates[variant]);
    expect(engineNames(copy.Resources).notificationFilter).toEqual({ prefix: undefined, suffix: undefined });
    mutation.apply(copy);
    // The run (run.test.ts) then reports each upload the filter keeps from the queue as a wiring error.
    expect(engineNames(copy.Resources).notificationFilter).toEqual({ prefix: 'incoming/', suffix: undefined });
  });
});

test.each([
  ['Resources', 500, /^template-resource-count: \S+\.nested\.template\.json declares 501 resources \(at most 500\)$/],
  ['Parameters', 200, /^template-parameter-and-output-count: \S+\.nested\.template\.json declares 201 parameters/],
  ['Outputs', 200, /^template-parameter-and-output-count: \S+\.nested\.template\.json declares 201 outputs/],
] as const)(
  'a nested template with one more of its %s than CloudFormation takes is reported, alone',
  async (section, quota, expected) => {
    const copies = structuredClone(files.default) as AssemblyTemplate[];
    const nested = copies[1].template as unknown as Record<string, Record<string, unknown>>;
    const entries = { ...(nested[section] ?? {}) };
    const sample = Object.values(entries)[0];
    for (let i = Object.keys(entries).length; i <= quota; i += 1) entries[`Padding${i}`] = sample;
    nested[section] = entries;
    // The flattened whole is unchanged and well under any quota: only the count of each file breaks it.
    const found = await deployRuleViolations(templates.default, copies);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatch(expected);
  },
);

test('docs/stack-check.md lists every deploy rule and every mutation', () => {
  const page = readFileSync(join(__dirname, '..', '..', 'docs', 'stack-check.md'), 'utf8');
  const missing = [...DEPLOY_RULES.map((r) => r.id), ...MUTATIONS.map((m) => m.id)].filter(
    (id) => !page.includes(`\`${id}\``),
  );
  expect(missing).toEqual([]);
});
