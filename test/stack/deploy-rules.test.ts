/**
 * The rules AWS enforces at deploy time (lib/stack-check/deploy-rules.ts) hold for both variants of the stack, and the
 * mutations of test/stack/mutations.ts that the template alone shows (deploy rules, template wiring) are each caught. The
 * mutations that need the functions run are applied in test/stack/run.test.ts.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CfnTemplate } from '../../lib/stack-check/cloud-assembly';
import { DEPLOY_RULES, deployRuleViolations } from '../../lib/stack-check/deploy-rules';
import { engineNames } from '../../lib/stack-check/stack-runner';
import { synthesizeUnbundled } from '../helpers/synth';
import { MUTATIONS } from './mutations';

const templates: Record<string, CfnTemplate> = {};

beforeAll(() => {
  for (const [variant, context] of [
    ['default', {}],
    ['knowledgeIndex=dynamodb', { knowledgeIndex: 'dynamodb' }],
  ] as const) {
    const synthesized = synthesizeUnbundled(context);
    templates[variant] = synthesized.template.toJSON() as CfnTemplate;
    synthesized.dispose();
  }
}, 120_000);

test.each(['default', 'knowledgeIndex=dynamodb'])('the %s stack breaks none of the deploy rules', async (variant) => {
  expect(await deployRuleViolations(templates[variant])).toEqual([]);
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

test('docs/stack-check.md lists every deploy rule and every mutation', () => {
  const page = readFileSync(join(__dirname, '..', '..', 'docs', 'stack-check.md'), 'utf8');
  const missing = [...DEPLOY_RULES.map((r) => r.id), ...MUTATIONS.map((m) => m.id)].filter(
    (id) => !page.includes(`\`${id}\``),
  );
  expect(missing).toEqual([]);
});
