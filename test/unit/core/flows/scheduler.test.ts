/**
 * The schedule tick (core/flows/scheduler.ts) against dynalite: the real definition store (its `scheduled` index) and
 * the real fire log (DynamoScheduleFireLog, in the rate limits table); the flow runner's queue is a list the test
 * reads (the real queue and runner: test/integration/schedule-fires.test.ts). The tick's time is passed by hand.
 *
 * Proves: one message per due fire, in each trigger's time zone, across tenants, and none before the definition was
 * stored; a trigger whose cron cannot be read is left out, the others sent; a fire is sent once by ticks that follow one another, a later tick sends only the later fires; a late tick
 * catches up the fires of its 15-minute look-back and no older ones; a send that fails stops that trigger there and
 * the next tick sends from that fire on, nothing twice; a fire log that cannot be written makes the next tick send
 * again (the runner runs such a fire once: schedule-fire.test.ts); every tenant's sends are under way at once, none
 * waiting for another's; past its deadline the tick starts no further trigger and the next tick sends the rest.
 */
import { randomUUID } from 'node:crypto';
import { DynamoDefinitionStore } from '#adapters/store/dynamodb/flow-stores';
import { DynamoScheduleFireLog } from '#adapters/store/dynamodb/schedule-fire-log';
import { validateDefinition } from '#core/flows/definition';
import { runScheduleTick, SCHEDULE_LOOKBACK_MS, type ScheduleTickDeps, scheduleKey } from '#core/flows/scheduler';
import type { FlowRunMessage, ScheduleFireLog, ScheduleFireMessage } from '#ports/flows';
import { TABLES } from '../../../../lib/tables';
import { type LocalDynamo, startDynalite } from '../../../helpers/dynalite';

let dynamo: LocalDynamo;
let definitions: DynamoDefinitionStore;
let fireLog: DynamoScheduleFireLog;
let tableCount = 0;

beforeAll(async () => {
  dynamo = await startDynalite();
  fireLog = new DynamoScheduleFireLog(dynamo.client, await dynamo.createTable('rateLimits', TABLES.rateLimits));
});

afterAll(() => dynamo?.stop());

// Each test lists the scheduled definitions of a table of its own: what another test stored is not due here.
beforeEach(async () => {
  tableCount += 1;
  definitions = new DynamoDefinitionStore(
    dynamo.client,
    await dynamo.createTable(`agentDefinitions${tableCount}`, TABLES.agentDefinitions),
  );
});

const at = (iso: string) => new Date(iso);

/** The tick's deps with a queue the test reads; `send` may be replaced to fail or hang. */
function tickDeps(
  send: (message: ScheduleFireMessage) => Promise<void> = async () => undefined,
  scheduleFires: ScheduleFireLog = fireLog,
) {
  const sent: ScheduleFireMessage[] = [];
  const deps: ScheduleTickDeps = {
    definitions,
    scheduleFires,
    runs: {
      send: async (message: FlowRunMessage) => {
        if (message.kind !== 'schedule-fire') throw new Error(`the tick sent ${message.kind}`);
        await send(message);
        sent.push(message);
      },
    },
  };
  return { deps, sent };
}

/** Stores a definition of schedule triggers (name → cron, time zone) for a new agent of its own organization. */
async function scheduled(
  triggers: Record<string, { cron: string; timezone?: string }>,
  updatedAt = '2026-03-01T00:00:00.000Z',
): Promise<string> {
  const agentId = randomUUID();
  const outcome = validateDefinition({
    flows: Object.entries(triggers).map(([name, { cron, timezone }], index) => ({
      name: `flow${index}`,
      nodes: [
        { name, type: 'trigger', triggerType: 'schedule', cronExpression: cron, ...(timezone ? { timezone } : {}) },
        { name: `${name}Step`, type: 'junction' },
      ],
      edges: [{ from: name, to: `${name}Step`, type: 'stepForward' }],
    })),
  });
  if (!outcome.valid) throw new Error(JSON.stringify(outcome.problems));
  await definitions.put({
    agentId,
    environment: 'production',
    organizationId: `org-${agentId}`,
    definition: outcome.definition,
    version: 1,
    updatedAt,
    hasSchedule: true,
  });
  return agentId;
}

const fire = (agentId: string, trigger: string, scheduledAt: string): ScheduleFireMessage => ({
  kind: 'schedule-fire',
  agentId,
  environment: 'production',
  trigger,
  scheduledAt,
});

const sorted = (messages: readonly ScheduleFireMessage[]) =>
  [...messages].sort((a, b) =>
    `${a.agentId}${a.trigger}${a.scheduledAt}`.localeCompare(`${b.agentId}${b.trigger}${b.scheduledAt}`),
  );

it('sends one message per due fire, in each trigger’s time zone, across tenants', async () => {
  const every5 = await scheduled({ Every5: { cron: '*/5 * * * *' } });
  // 09:30 in Kolkata (UTC+5:30) is 04:00 UTC.
  const kolkata = await scheduled({ Morning: { cron: '30 9 * * *', timezone: 'Asia/Kolkata' } });
  const two = await scheduled({ Hourly: { cron: '0 * * * *' }, Ten: { cron: '0 10 * * *' } });
  await scheduled({ Never: { cron: '0 0 1 1 *' } });
  const { deps, sent } = tickDeps();

  const outcome = await runScheduleTick(deps, at('2026-03-02T04:02:30.000Z'));
  expect(outcome).toEqual({ triggers: 3, sent: 5, alreadySent: 0, failed: 0, deferred: 0 });
  expect(sorted(sent)).toEqual(
    sorted([
      fire(every5, 'Every5', '2026-03-02T03:50:00.000Z'),
      fire(every5, 'Every5', '2026-03-02T03:55:00.000Z'),
      fire(every5, 'Every5', '2026-03-02T04:00:00.000Z'),
      fire(kolkata, 'Morning', '2026-03-02T04:00:00.000Z'),
      fire(two, 'Hourly', '2026-03-02T04:00:00.000Z'),
    ]),
  );
  // A trigger's fires go out oldest first.
  expect(sent.filter((m) => m.agentId === every5).map((m) => m.scheduledAt)).toEqual([
    '2026-03-02T03:50:00.000Z',
    '2026-03-02T03:55:00.000Z',
    '2026-03-02T04:00:00.000Z',
  ]);
  expect(await fireLog.sentThrough(scheduleKey(every5, 'production', 'Every5'))).toBe(
    Date.parse('2026-03-02T04:00:00.000Z'),
  );
});

it('leaves out a trigger whose cron cannot be read, telling why, and sends the others', async () => {
  const good = await scheduled({ Hourly: { cron: '0 * * * *' } });
  // Stored before a rule changed (the store takes what it is given; PUT validates): an unknown time zone.
  const broken = await scheduled({ Hourly: { cron: '0 * * * *' } });
  const record = await definitions.get(broken, 'production');
  if (!record) throw new Error('not stored');
  const [flow] = record.definition.flows;
  await definitions.put({
    ...record,
    definition: {
      ...record.definition,
      flows: [
        { ...flow, nodes: flow.nodes.map((n) => (n.type === 'trigger' ? { ...n, timezone: 'Mars/Olympus' } : n)) },
      ],
    },
  });
  const errors: { agentId: string; trigger: string }[] = [];
  const { deps, sent } = tickDeps();
  await expect(
    runScheduleTick(deps, at('2026-03-02T09:00:30.000Z'), { onError: (_error, fire) => errors.push(fire) }),
  ).resolves.toMatchObject({ triggers: 1, sent: 1 });
  expect(sent).toEqual([fire(good, 'Hourly', '2026-03-02T09:00:00.000Z')]);
  expect(errors).toEqual([{ agentId: broken, trigger: 'Hourly' }]);
});

it('sends a fire once: the same minute again sends nothing, a later tick only the later fires', async () => {
  const agentId = await scheduled({ Every5: { cron: '*/5 * * * *' } });
  const { deps, sent } = tickDeps();
  await runScheduleTick(deps, at('2026-03-03T04:02:30.000Z'));
  expect(sent).toHaveLength(3);

  await expect(runScheduleTick(deps, at('2026-03-03T04:02:45.000Z'))).resolves.toEqual({
    triggers: 1,
    sent: 0,
    alreadySent: 3,
    failed: 0,
    deferred: 0,
  });
  // 03:50 is past the look-back now: 03:55 and 04:00 were sent, 04:05 is new.
  await expect(runScheduleTick(deps, at('2026-03-03T04:05:10.000Z'))).resolves.toMatchObject({
    sent: 1,
    alreadySent: 2,
  });
  expect(sent.map((m) => m.scheduledAt)).toEqual([
    '2026-03-03T03:50:00.000Z',
    '2026-03-03T03:55:00.000Z',
    '2026-03-03T04:00:00.000Z',
    '2026-03-03T04:05:00.000Z',
  ]);
  expect(new Set(sent.map((m) => m.agentId))).toEqual(new Set([agentId]));
});

it('sends no fire from before the definition was stored', async () => {
  const agentId = await scheduled({ Minutely: { cron: '* * * * *' } }, '2026-03-04T04:00:30.000Z');
  const { deps, sent } = tickDeps();
  await runScheduleTick(deps, at('2026-03-04T04:02:30.000Z'));
  expect(sent).toEqual([
    fire(agentId, 'Minutely', '2026-03-04T04:01:00.000Z'),
    fire(agentId, 'Minutely', '2026-03-04T04:02:00.000Z'),
  ]);
});

it('catches up the fires of its 15-minute look-back after a late tick, and no older ones', async () => {
  expect(SCHEDULE_LOOKBACK_MS).toBe(15 * 60_000);
  await scheduled({ Minutely: { cron: '* * * * *' } });
  const { deps, sent } = tickDeps();
  await runScheduleTick(deps, at('2026-03-05T10:00:10.000Z'));
  const first = sent.length;
  expect(sent.at(-1)?.scheduledAt).toBe('2026-03-05T10:00:00.000Z');

  // The next ticks are 10 minutes late (the scheduler, the tick or the queue down): all ten fires go out.
  await expect(runScheduleTick(deps, at('2026-03-05T10:10:10.000Z'))).resolves.toMatchObject({ sent: 10 });
  expect(sent.slice(first).map((m) => m.scheduledAt.slice(11, 16))).toEqual([
    '10:01',
    '10:02',
    '10:03',
    '10:04',
    '10:05',
    '10:06',
    '10:07',
    '10:08',
    '10:09',
    '10:10',
  ]);
  // 40 minutes late: the 15 minutes of the look-back, the older fires are not sent.
  await expect(runScheduleTick(deps, at('2026-03-05T10:50:10.000Z'))).resolves.toMatchObject({ sent: 15 });
  expect(sent.at(-15)?.scheduledAt).toBe('2026-03-05T10:36:00.000Z');
});

it('stops a trigger at a send that fails; the next tick sends from that fire on, each fire once', async () => {
  const failing = await scheduled({ Every5: { cron: '*/5 * * * *' } });
  const other = await scheduled({ Hourly: { cron: '0 * * * *' } });
  let failOn: string | null = '2026-03-06T03:55:00.000Z';
  const errors: unknown[] = [];
  const { deps, sent } = tickDeps(async (message) => {
    if (message.agentId === failing && message.scheduledAt === failOn) throw new Error('queue unreachable');
  });

  const outcome = await runScheduleTick(deps, at('2026-03-06T04:02:30.000Z'), {
    onError: (error) => errors.push(error),
  });
  // 03:50 went out; 03:55 failed and 04:00 was not tried after it; the other tenant's fire went out.
  expect(outcome).toEqual({ triggers: 2, sent: 2, alreadySent: 0, failed: 2, deferred: 0 });
  expect(errors).toEqual([new Error('queue unreachable')]);
  expect(sorted(sent)).toEqual(
    sorted([fire(failing, 'Every5', '2026-03-06T03:50:00.000Z'), fire(other, 'Hourly', '2026-03-06T04:00:00.000Z')]),
  );

  failOn = null;
  await expect(runScheduleTick(deps, at('2026-03-06T04:03:30.000Z'))).resolves.toMatchObject({
    sent: 2,
    alreadySent: 2,
    failed: 0,
  });
  expect(sent.filter((m) => m.agentId === failing).map((m) => m.scheduledAt)).toEqual([
    '2026-03-06T03:50:00.000Z',
    '2026-03-06T03:55:00.000Z',
    '2026-03-06T04:00:00.000Z',
  ]);
});

it('sends the fires again when what it sent could not be recorded (the runner runs each once)', async () => {
  const agentId = await scheduled({ Hourly: { cron: '0 * * * *' } });
  const unwritable: ScheduleFireLog = {
    sentThrough: (trigger) => fireLog.sentThrough(trigger),
    markSent: async () => {
      throw new Error('table unreachable');
    },
  };
  const errors: unknown[] = [];
  const broken = tickDeps(undefined, unwritable);
  await expect(
    runScheduleTick(broken.deps, at('2026-03-07T04:00:20.000Z'), { onError: (error) => errors.push(error) }),
  ).resolves.toMatchObject({ sent: 1, failed: 0 });
  expect(errors).toEqual([new Error('table unreachable')]);

  const { deps, sent } = tickDeps();
  await expect(runScheduleTick(deps, at('2026-03-07T04:01:20.000Z'))).resolves.toMatchObject({ sent: 1 });
  expect(sent).toEqual([fire(agentId, 'Hourly', '2026-03-07T04:00:00.000Z')]);
  await expect(runScheduleTick(deps, at('2026-03-07T04:02:20.000Z'))).resolves.toMatchObject({
    sent: 0,
    alreadySent: 1,
  });
});

it('sends every tenant’s fires side by side, none waiting for another’s send', async () => {
  const tenants = await Promise.all(Array.from({ length: 6 }, () => scheduled({ Hourly: { cron: '0 * * * *' } })));
  // Every send hangs until released: a tick that waited for one tenant before the next would start one send only.
  const started: string[] = [];
  let release: () => void = () => undefined;
  const hanging = new Promise<void>((resolve) => {
    release = resolve;
  });
  const { deps, sent } = tickDeps((message) => {
    started.push(message.agentId);
    return hanging;
  });

  const tick = runScheduleTick(deps, at('2026-03-08T04:00:20.000Z'));
  await waitFor(() => started.length === tenants.length);
  expect(new Set(started)).toEqual(new Set(tenants));
  expect(sent).toEqual([]);
  release();
  await expect(tick).resolves.toMatchObject({ triggers: 6, sent: 6 });
});

it('starts no trigger past its deadline; the next tick sends what was left', async () => {
  await scheduled({ Hourly: { cron: '0 * * * *' } });
  await scheduled({ Daily: { cron: '0 4 * * *' } });
  const { deps, sent } = tickDeps();
  await expect(
    runScheduleTick(deps, at('2026-03-09T04:00:20.000Z'), { deadline: 1_000, clock: () => 1_000 }),
  ).resolves.toEqual({ triggers: 2, sent: 0, alreadySent: 0, failed: 0, deferred: 2 });
  expect(sent).toEqual([]);
  await expect(runScheduleTick(deps, at('2026-03-09T04:01:20.000Z'))).resolves.toMatchObject({
    sent: 2,
    deferred: 0,
  });
});

async function waitFor(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > until) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
