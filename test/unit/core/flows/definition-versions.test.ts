/**
 * The versions of a definition (core/flows/definitions.ts, definition-versions.ts) against the DynamoDB definition
 * store on dynalite: who and when, unchanged saves, the retention, paging, the version guard, a restore, and the
 * deletion of the history. The HTTP side is test/integration/definition-versions.test.ts.
 */
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { DynamoDefinitionStore } from '#adapters/store/dynamodb/flow-stores';
import { canonicalJson, sameDefinition } from '#core/flows/canonical-json';
import {
  getDefinitionVersion,
  listDefinitionVersions,
  restoreDefinitionVersion,
} from '#core/flows/definition-versions';
import { type DefinitionDeps, getAgentDefinition, putAgentDefinition } from '#core/flows/definitions';
import type { Caller } from '#core/tenancy/tenancy';
import { TABLES } from '../../../../lib/tables';
import { type LocalDynamo, startDynalite } from '../../../helpers/dynalite';
import { helloAndTicketDefinition } from '../../../helpers/flow-definitions';
import { InMemoryAgentStore, SettableClock } from '../../../helpers/in-memory-ports';

const ORG = 'org-a';
const PERSON: Caller = {
  organizationId: ORG,
  tokenId: 'person:sub-1',
  scopes: ['dashboard'],
  email: 'ada@example.com',
};
const TOKEN: Caller = { organizationId: ORG, tokenId: 'token-7', scopes: ['dashboard'] };
const STRANGER: Caller = { organizationId: 'org-b', tokenId: 'token-b', scopes: ['dashboard'] };
let dynamo: LocalDynamo;
let deps: DefinitionDeps & { clock: SettableClock };
let agentCount = 0;
let agentId: string;

beforeAll(async () => {
  dynamo = await startDynalite();
  await dynamo.createTable('agentDefinitions', TABLES.agentDefinitions);
});
afterAll(() => dynamo.stop());

beforeEach(async () => {
  agentCount += 1;
  agentId = `agent-${agentCount}`;
  const agents = new InMemoryAgentStore();
  await agents.put({ organizationId: ORG, agentId, displayName: 'Support', createdAt: '2026-01-01T00:00:00.000Z' });
  deps = {
    agents,
    definitions: new DynamoDefinitionStore(dynamo.client, 'agentDefinitions'),
    clock: new SettableClock(new Date('2026-03-01T10:00:00.000Z')),
  };
});

/** The definition with its instructions set to `text`: a change that stores a new version. */
const edited = (text: string) => ({ ...structuredClone(helloAndTicketDefinition), instructions: text });

const save = (caller: Caller, definition: unknown, expectedVersion?: number) =>
  putAgentDefinition(deps, caller, agentId, 'production', definition, expectedVersion);

async function itemsOfAgent(): Promise<string[]> {
  const { Items = [] } = await dynamo.client.send(new ScanCommand({ TableName: 'agentDefinitions' }));
  return Items.filter((item) => item.agentId === agentId).map((item) => String(item.environment));
}

describe('canonical JSON', () => {
  it('is the same text whatever the order of object keys, and differs when an array is reordered', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, 2], c: null } })).toBe('{"a":{"c":null,"d":[1,2]},"b":1}');
    expect(sameDefinition({ a: 1, b: { x: 1, y: 2 } }, { b: { y: 2, x: 1 }, a: 1 })).toBe(true);
    expect(sameDefinition({ a: [1, 2] }, { a: [2, 1] })).toBe(false);
    expect(sameDefinition({ a: 1, b: undefined }, { a: 1 })).toBe(true);
  });
});

describe('saving', () => {
  it('records who saved each version (a person by e-mail, a token by id) and when', async () => {
    const first = await save(PERSON, edited('one'));
    deps.clock.advanceSeconds(60);
    const second = await save(TOKEN, edited('two'));
    expect(first).toMatchObject({ unchanged: false, record: { version: 1, updatedAt: '2026-03-01T10:00:00.000Z' } });
    expect(first.record.updatedBy).toEqual({ kind: 'person', email: 'ada@example.com' });
    expect(second).toMatchObject({ unchanged: false, record: { version: 2, updatedAt: '2026-03-01T10:01:00.000Z' } });
    expect(second.record.updatedBy).toEqual({ kind: 'token', tokenId: 'token-7' });
    // The current item and version 1 in the history.
    expect((await itemsOfAgent()).sort()).toEqual(['production', 'production#v#0000000001']);
  });

  it('stores nothing when the definition equals the current one, keys in another order included', async () => {
    await save(PERSON, edited('one'));
    const reordered = Object.fromEntries(Object.entries(edited('one')).reverse());
    deps.clock.advanceSeconds(60);
    const again = await save(TOKEN, reordered);
    expect(again.unchanged).toBe(true);
    expect(again.record).toMatchObject({ version: 1, updatedAt: '2026-03-01T10:00:00.000Z' });
    expect(again.record.updatedBy).toEqual({ kind: 'person', email: 'ada@example.com' });
    expect(await itemsOfAgent()).toEqual(['production']);
  });

  it('refuses a save made on another version than the current one with 409 VERSION_CONFLICT', async () => {
    await expect(save(PERSON, edited('one'), 1)).rejects.toMatchObject({ status: 409, code: 'VERSION_CONFLICT' });
    await save(PERSON, edited('one'), 0);
    await save(PERSON, edited('two'), 1);
    await expect(save(TOKEN, edited('three'), 1)).rejects.toMatchObject({
      status: 409,
      code: 'VERSION_CONFLICT',
      details: [{ field: 'expectedVersion', rule: 'version.current' }],
    });
    expect((await getAgentDefinition(deps, PERSON, agentId, 'production')).version).toBe(2);
  });

  it('answers 409 VERSION_CONFLICT to the loser of two saves at once, and keeps both versions apart', async () => {
    await save(PERSON, edited('base'));
    const outcomes = await Promise.allSettled([save(PERSON, edited('mine')), save(TOKEN, edited('yours'))]);
    const stored = outcomes.filter((o) => o.status === 'fulfilled');
    const refused = outcomes.filter((o) => o.status === 'rejected');
    expect(stored).toHaveLength(1);
    expect(refused.map((o) => (o as PromiseRejectedResult).reason.code)).toEqual(['VERSION_CONFLICT']);
    expect((await itemsOfAgent()).sort()).toEqual(['production', 'production#v#0000000001']);
  });

  it('keeps the last 100 versions: the 101st save forgets version 1', async () => {
    for (let n = 1; n <= 101; n++) await save(TOKEN, edited(`v${n}`));
    const items = await itemsOfAgent();
    expect(items).toHaveLength(100);
    expect(items).not.toContain('production#v#0000000001');
    expect(items).toContain('production#v#0000000002');
    await expect(getDefinitionVersion(deps, TOKEN, agentId, 'production', 1)).rejects.toMatchObject({
      status: 404,
      code: 'DEFINITION_VERSION_NOT_FOUND',
    });
    expect((await getDefinitionVersion(deps, TOKEN, agentId, 'production', 2)).definition.instructions).toBe('v2');
  }, 60_000);
});

describe('the version list', () => {
  it('is newest first, the current one marked, a page at a time', async () => {
    for (let n = 1; n <= 5; n++) {
      await save(n % 2 === 0 ? TOKEN : PERSON, edited(`v${n}`));
      deps.clock.advanceSeconds(1);
    }
    const first = await listDefinitionVersions(deps, TOKEN, { agentId, environment: 'production', limit: 2 });
    expect(first.data.map((v) => [v.version, v.current])).toEqual([
      [5, true],
      [4, false],
    ]);
    expect(first.data[0]).toEqual({
      version: 5,
      updatedAt: '2026-03-01T10:00:04.000Z',
      updatedBy: { kind: 'person', email: 'ada@example.com' },
      restoredFrom: null,
      flowCount: 2,
      nodeCount: 4,
      current: true,
    });
    expect(first.data[1].updatedBy).toEqual({ kind: 'token', tokenId: 'token-7' });
    const pages = [first.data.map((v) => v.version)];
    let token = first.nextToken;
    while (token !== null) {
      const page = await listDefinitionVersions(deps, TOKEN, {
        agentId,
        environment: 'production',
        limit: 2,
        nextToken: token,
      });
      pages.push(page.data.map((v) => v.version));
      token = page.nextToken;
    }
    expect(pages).toEqual([[5, 4], [3, 2], [1]]);
    // A page of exactly what is left has no next page.
    const all = await listDefinitionVersions(deps, TOKEN, { agentId, environment: 'production', limit: 5 });
    expect([all.count, all.nextToken]).toEqual([5, null]);
  });

  it('is empty where nothing is stored, and refuses a token of another list', async () => {
    expect(await listDefinitionVersions(deps, TOKEN, { agentId, environment: 'staging' })).toEqual({
      data: [],
      count: 0,
      nextToken: null,
    });
    for (let n = 1; n <= 3; n++) await save(TOKEN, edited(`v${n}`));
    const page = await listDefinitionVersions(deps, TOKEN, { agentId, environment: 'production', limit: 1 });
    await expect(
      listDefinitionVersions(deps, TOKEN, { agentId, environment: 'staging', nextToken: page.nextToken as string }),
    ).rejects.toMatchObject({ status: 400, details: [{ field: 'nextToken', rule: 'nextToken.query' }] });
  });

  it('is not found for another organization', async () => {
    await save(TOKEN, edited('one'));
    await expect(listDefinitionVersions(deps, STRANGER, { agentId, environment: 'production' })).rejects.toMatchObject({
      status: 404,
      code: 'AGENT_NOT_FOUND',
    });
    await expect(getDefinitionVersion(deps, STRANGER, agentId, 'production', 1)).rejects.toMatchObject({
      status: 404,
      code: 'AGENT_NOT_FOUND',
    });
  });
});

describe('restore', () => {
  it('stores the old definition as the next version, with where it came from; the current one is unchanged', async () => {
    await save(PERSON, edited('one'));
    await save(PERSON, edited('two'));
    const restored = await restoreDefinitionVersion(deps, TOKEN, { agentId, environment: 'production', version: 1 });
    expect(restored.unchanged).toBe(false);
    expect(restored.record).toMatchObject({ version: 3, restoredFrom: 1, updatedBy: { kind: 'token' } });
    expect(restored.record.definition).toEqual(
      (await getDefinitionVersion(deps, TOKEN, agentId, 'production', 1)).definition,
    );
    const again = await restoreDefinitionVersion(deps, TOKEN, { agentId, environment: 'production', version: 1 });
    expect(again).toMatchObject({ unchanged: true, record: { version: 3 } });
    const list = await listDefinitionVersions(deps, TOKEN, { agentId, environment: 'production' });
    expect(list.data.map((v) => [v.version, v.restoredFrom])).toEqual([
      [3, 1],
      [2, null],
      [1, null],
    ]);
  });

  it('refuses an old version that no longer passes the rules, with its problems', async () => {
    // Stored while the deployment checked no agent code functions…
    const withCode = {
      ...edited('with code'),
      agentCode: { functionArn: 'arn:aws:lambda:eu-west-1:123456789012:function:gone' },
    };
    expect((await save(PERSON, withCode)).record.version).toBe(1);
    await save(PERSON, edited('two'));
    // …and restored once it registers none: today's rules refuse it.
    const today = { ...deps, agentCodeFunctions: [] as string[] };
    await expect(
      restoreDefinitionVersion(today, TOKEN, { agentId, environment: 'production', version: 1 }),
    ).rejects.toMatchObject({
      status: 400,
      code: 'VALIDATION_ERROR',
      details: [{ field: 'agentCode.functionArn', rule: 'agentCode.functionNotRegistered' }],
    });
    expect((await getAgentDefinition(deps, PERSON, agentId, 'production')).version).toBe(2);
    await expect(
      restoreDefinitionVersion(deps, TOKEN, { agentId, environment: 'production', version: 9 }),
    ).rejects.toMatchObject({ status: 404, code: 'DEFINITION_VERSION_NOT_FOUND' });
  });
});

describe('deletion', () => {
  it('removes the current definition and its whole history, and nothing of another environment', async () => {
    for (let n = 1; n <= 3; n++) await save(TOKEN, edited(`v${n}`));
    await putAgentDefinition(deps, TOKEN, agentId, 'staging', edited('staging'));
    await deps.definitions.delete(agentId, 'production');
    expect(await itemsOfAgent()).toEqual(['staging']);
  });
});
