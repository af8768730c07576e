/**
 * The CLI (clients/cli, `npx aps`, issue 39 item 3) run as a child process, as a user runs it, against the local
 * runtime: login keeps the token in a 0600 file; kb sync uploads a folder with its labels, uploads nothing the
 * second time, only a changed file the third, deletes a removed file only with --delete, reports a failed file with
 * its code (exit 1), and resumes a killed run without uploading again what it finished; query answers hits; flows
 * pull, validate and push round-trip a definition (refusing a stale one); events export pages into a CSV.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import {
  createClient,
  type DocumentFields,
  type PlatformClient,
  type UploadLinkFields,
  unwrap,
} from '@agent-platform/client';
import { parse } from 'csv-parse/sync';
import { customDocumentIdOf, sha256 } from '../../clients/cli/src/sync';
import { refundFlow } from '../helpers/flow-definitions';
import { pollUntil } from '../helpers/poll';
import { startService, type TestService } from '../helpers/service';

jest.setTimeout(180_000);

const BIN = resolve(__dirname, '../../clients/cli/bin/aps.js');

let service: TestService;
let api: PlatformClient;
let home: string;
let agentId: string;
let knowledgeBaseId: string;

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** `aps …` with its own config folder; `env` adds to (or, undefined, removes from) the environment. */
function start(args: readonly string[], options: { env?: Record<string, string | undefined>; input?: string } = {}) {
  const env: NodeJS.ProcessEnv = { ...process.env, XDG_CONFIG_HOME: join(home, 'config') };
  delete env.APS_BASE_URL;
  delete env.APS_TOKEN;
  for (const [name, value] of Object.entries(options.env ?? {})) {
    if (value === undefined) delete env[name];
    else env[name] = value;
  }
  const child = spawn(process.execPath, [BIN, ...args], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  child.stdin?.end(options.input ?? '');
  return child;
}

function finished(child: ChildProcess): Promise<Run> {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise((done) => child.once('close', (code) => done({ code, stdout, stderr })));
}

const aps = (args: readonly string[], options?: Parameters<typeof start>[1]) => finished(start(args, options));

interface Summary {
  files: number;
  uploaded: string[];
  metadataUpdated: string[];
  unchanged: string[];
  deleted: string[];
  notDeleted: string[];
  ready: string[];
  failed: { path: string; code: string; message: string }[];
  processing: string[];
}

async function sync(folder: string, ...flags: string[]): Promise<Run & { summary: Summary }> {
  const run = await aps([
    'kb',
    'sync',
    folder,
    '--agent',
    agentId,
    '--kb',
    knowledgeBaseId,
    '--env',
    'production',
    '--json',
    ...flags,
  ]);
  return { ...run, summary: JSON.parse(run.stdout) as Summary };
}

function writeFiles(folder: string, files: Record<string, string>): void {
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(folder, path, '..'), { recursive: true });
    writeFileSync(join(folder, path), content);
  }
}

interface Definition {
  instructions?: string;
  flows: { name: string; nodes: Record<string, unknown>[]; edges: unknown[] }[];
}

const dataset = () => ({ agentId, knowledgeBaseId, environment: 'production' as const });

async function documentsByFileName(): Promise<Map<string, DocumentFields>> {
  const list = (await unwrap(
    api.GET('/api/v1/knowledge/documents/list', { params: { query: { ...dataset(), limit: '100' } } }),
  )) as unknown as { documents: DocumentFields[] };
  return new Map(list.documents.map((doc) => [doc.fileName, doc]));
}

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), 'aps-cli-'));
  service = await startService();
  api = createClient({ baseUrl: service.baseUrl, token: service.tokens[0] });
  const agent = (await unwrap(api.POST('/dashboard/agents', { body: { displayName: 'CLI bot' } }))) as unknown as {
    agentId: string;
  };
  agentId = agent.agentId;
  const kb = (await unwrap(
    api.POST('/dashboard/agents/{agentId}/knowledge/bases', {
      params: { path: { agentId } },
      body: { name: 'Handbook', description: 'Synced from a folder' },
    }),
  )) as unknown as { knowledgeBaseId: string };
  knowledgeBaseId = kb.knowledgeBaseId;

  // Every later command runs with what login kept (no APS_* in their environment).
  const login = await aps(['login', '--base-url', service.baseUrl, '--token', service.tokens[0]]);
  expect(login).toMatchObject({ code: 0, stderr: '' });
});

afterAll(async () => {
  await service?.stop();
  if (home) rmSync(home, { recursive: true, force: true });
});

describe('aps login', () => {
  it('keeps the address and token in a file only its user can read', () => {
    const file = join(home, 'config', 'aps', 'config.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(home, 'config', 'aps')).mode & 0o777).toBe(0o700);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ baseUrl: service.baseUrl, token: service.tokens[0] });
  });

  it('refuses a token the service does not know, and reads one from standard input', async () => {
    const own = { XDG_CONFIG_HOME: join(home, 'other-config') };
    const refused = await aps(['login', '--base-url', service.baseUrl, '--token', 'unknown-token-0123456789'], {
      env: own,
    });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/does not know this token \(401\)/);

    const piped = await aps(['login', '--base-url', `${service.baseUrl}/`], {
      env: own,
      input: `${service.tokens[1]}\n`,
    });
    expect(piped.code).toBe(0);
    const file = join(home, 'other-config', 'aps', 'config.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ baseUrl: service.baseUrl, token: service.tokens[1] });
  });

  it('lets APS_TOKEN override the kept token, and reports the API error’s code', async () => {
    const run = await aps(['query', 'anything', '--agent', agentId, '--kb', knowledgeBaseId, '--env', 'production'], {
      env: { APS_TOKEN: 'unknown-token-0123456789' },
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^error: UNAUTHORIZED \(401\)/);
  });
});

describe('aps kb sync', () => {
  let folder: string;

  beforeAll(() => {
    folder = join(home, 'handbook');
    writeFiles(folder, {
      'returns.txt': 'Gold customers may return any order within 60 days.',
      'guides/setup.md': '# Setup\n\nHold the power button for five seconds to reset the router.',
      'guides/wifi.txt': 'The wifi password is printed under the router.',
      '.notes/private.txt': 'Dot folders are not synced.',
      // The label file of a ZIP import: a header, a row by path, a row by base name.
      'labels.csv':
        'file,label1,label2,customMeta1\nreturns.txt,topic:returns,lang:en,owner=desk\nguides/setup.md,topic:setup,,\n',
    });
  });

  it('uploads a folder with labels from a CSV and flags, all ready', async () => {
    const run = await sync(
      folder,
      '--labels-csv',
      join(folder, 'labels.csv'),
      '--label1',
      'topic:misc',
      '--concurrency',
      '2',
    );
    expect(run.code).toBe(0);
    expect(run.summary).toMatchObject({
      files: 3,
      unchanged: [],
      failed: [],
      processing: [],
      ready: ['guides/setup.md', 'guides/wifi.txt', 'returns.txt'],
    });
    expect([...run.summary.uploaded].sort()).toEqual(['guides/setup.md', 'guides/wifi.txt', 'returns.txt']);
    const docs = await documentsByFileName();
    expect([...docs.keys()].sort()).toEqual(['returns.txt', 'setup.md', 'wifi.txt']);
    expect(docs.get('returns.txt')).toMatchObject({
      status: 'ready',
      label1: 'topic:returns',
      label2: 'lang:en',
      customMeta1: 'owner=desk',
    });
    expect(docs.get('setup.md')).toMatchObject({ label1: 'topic:setup', label2: null, customMeta1: null });
    expect(docs.get('wifi.txt')).toMatchObject({ label1: 'topic:misc', label2: null });
    expect(docs.get('wifi.txt')?.customDocumentId).toMatch(/^guides_wifi\.txt@[0-9a-f]{12}$/);
  });

  it('uploads nothing again, then only the changed file, keeping its document', async () => {
    const labels = ['--labels-csv', join(folder, 'labels.csv'), '--label1', 'topic:misc'];
    const again = await sync(folder, ...labels);
    expect(again.code).toBe(0);
    expect(again.summary).toMatchObject({ uploaded: [], metadataUpdated: [], deleted: [] });
    expect(again.summary.unchanged).toHaveLength(3);

    const before = await documentsByFileName();
    const wifi = 'The wifi password is printed on the back of the router.';
    writeFiles(folder, { 'guides/wifi.txt': wifi });
    const changed = await sync(folder, ...labels);
    expect(changed.code).toBe(0);
    expect(changed.summary).toMatchObject({
      uploaded: ['guides/wifi.txt'],
      ready: expect.arrayContaining(['guides/wifi.txt']),
    });
    const after = await documentsByFileName();
    expect(after.get('wifi.txt')).toMatchObject({
      documentId: before.get('wifi.txt')?.documentId,
      fileSize: Buffer.byteLength(wifi),
    });
    expect(after.get('returns.txt')?.updatedAt).toBe(before.get('returns.txt')?.updatedAt);

    // A label changed in the CSV alone changes the labels, not the content.
    writeFiles(folder, { 'labels.csv': 'returns.txt,topic:refunds,lang:en,owner=desk\nguides/setup.md,topic:setup\n' });
    const relabelled = await sync(folder, ...labels);
    expect(relabelled.summary).toMatchObject({ uploaded: [], metadataUpdated: ['returns.txt'] });
    expect((await documentsByFileName()).get('returns.txt')).toMatchObject({
      label1: 'topic:refunds',
      status: 'ready',
    });
  });

  it('deletes a removed file’s document only with --delete', async () => {
    const labels = ['--labels-csv', join(folder, 'labels.csv'), '--label1', 'topic:misc'];
    unlinkSync(join(folder, 'guides/setup.md'));
    const kept = await sync(folder, ...labels);
    expect(kept.summary).toMatchObject({ deleted: [], notDeleted: ['guides/setup.md'], uploaded: [] });
    expect((await documentsByFileName()).has('setup.md')).toBe(true);

    const removed = await sync(folder, ...labels, '--delete');
    expect(removed.code).toBe(0);
    expect(removed.summary).toMatchObject({ deleted: ['guides/setup.md'], notDeleted: [], uploaded: [] });
    expect([...(await documentsByFileName()).keys()].sort()).toEqual(['returns.txt', 'wifi.txt']);
  });

  it('reports a file processing refused with its code, and exits 1', async () => {
    writeFiles(folder, { 'blank.txt': '  \n\n ' });
    const run = await aps([
      'kb',
      'sync',
      folder,
      '--agent',
      agentId,
      '--kb',
      knowledgeBaseId,
      '--env',
      'production',
      '--labels-csv',
      join(folder, 'labels.csv'),
      '--label1',
      'topic:misc',
      '--no-progress',
    ]);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/failed blank\.txt: EMPTY_DOCUMENT/);
    expect(run.stdout).toMatch(/ready 2, failed 1, processing 0/);
  });

  it('resumes a run killed half-way without uploading again what it finished', async () => {
    const big = join(home, 'big');
    const files: Record<string, string> = {};
    for (let i = 0; i < 30; i += 1)
      files[`doc-${String(i).padStart(2, '0')}.txt`] = `Document number ${i} of the big folder.`;
    writeFiles(big, files);
    const stateFile = join(big, '.aps-sync.json');
    const doneIn = () => {
      try {
        const state = JSON.parse(readFileSync(stateFile, 'utf8')) as {
          datasets: Record<string, { files: Record<string, { sha256: string | null }> }>;
        };
        return Object.values(state.datasets)
          .flatMap((d) => Object.entries(d.files))
          .filter(([, f]) => f.sha256 !== null)
          .map(([path]) => path);
      } catch {
        return [];
      }
    };
    const child = start([
      'kb',
      'sync',
      big,
      '--agent',
      agentId,
      '--kb',
      knowledgeBaseId,
      '--env',
      'staging',
      '--concurrency',
      '1',
      '--json',
    ]);
    const exited = finished(child);
    await pollUntil(
      async () => doneIn().length,
      (n) => n >= 3,
      60_000,
    );
    child.kill('SIGKILL');
    await exited;
    const done = doneIn();
    expect(done.length).toBeGreaterThanOrEqual(3);
    expect(done.length).toBeLessThan(30);

    const resumed = await aps([
      'kb',
      'sync',
      big,
      '--agent',
      agentId,
      '--kb',
      knowledgeBaseId,
      '--env',
      'staging',
      '--json',
    ]);
    expect(resumed.code).toBe(0);
    const summary = JSON.parse(resumed.stdout) as Summary;
    expect(summary.uploaded.filter((path) => done.includes(path))).toEqual([]);
    expect(summary.unchanged).toEqual(expect.arrayContaining(done));
    expect(summary.ready).toHaveLength(30);
    const list = (await unwrap(
      api.GET('/api/v1/knowledge/documents/list', {
        params: { query: { agentId, knowledgeBaseId, environment: 'staging', limit: '100' } },
      }),
    )) as unknown as { counts: { total: number; ready: number } };
    expect(list.counts).toMatchObject({ total: 30, ready: 30 });
  });
  it('completes an upload a killed run had a link for, with that link, whether or not its PUT was done', async () => {
    const folder = join(home, 'linked');
    const files = { 'linked.txt': 'Issued a link, nothing more.', 'put.txt': 'Issued a link and sent the file.' };
    writeFiles(folder, files);
    const development = { agentId, knowledgeBaseId, environment: 'development' as const };
    const state: Record<string, unknown> = {};
    for (const [path, content] of Object.entries(files)) {
      const customDocumentId = customDocumentIdOf(path);
      const link = (await unwrap(
        api.POST('/api/v1/knowledge/documents/upload-link', {
          body: { ...development, fileName: path, fileSize: Buffer.byteLength(content), customDocumentId },
        }),
      )) as unknown as UploadLinkFields;
      if (path === 'put.txt') await api.putUpload(link, content);
      state[path] = {
        sha256: null,
        customDocumentId,
        documentId: null,
        s3Key: null,
        status: null,
        error: null,
        metadata: {},
        pending: { ...link, kind: 'create', sha256: sha256(content), issuedAt: new Date().toISOString() },
      };
    }
    writeFileSync(
      join(folder, '.aps-sync.json'),
      JSON.stringify({ version: 1, datasets: { [`${agentId}/development/${knowledgeBaseId}`]: { files: state } } }),
    );

    const run = await aps([
      'kb',
      'sync',
      folder,
      '--agent',
      agentId,
      '--kb',
      knowledgeBaseId,
      '--env',
      'development',
      '--json',
    ]);
    expect(run.code).toBe(0);
    // Only with those links: a new upload-link for these ids is refused while their reservations hold (409).
    const summary = JSON.parse(run.stdout) as Summary;
    expect([...summary.uploaded].sort()).toEqual(['linked.txt', 'put.txt']);
    expect(summary.ready).toEqual(['linked.txt', 'put.txt']);
    const list = (await unwrap(
      api.GET('/api/v1/knowledge/documents/list', { params: { query: { ...development, limit: '100' } } }),
    )) as unknown as { documents: DocumentFields[] };
    expect(list.documents.map((doc) => [doc.customDocumentId, doc.status]).sort()).toEqual(
      Object.keys(files).map((path) => [customDocumentIdOf(path), 'ready']),
    );
  });
  it('says a file whose id a stopped upload of other content reserves is pending, not missing', async () => {
    const folder = join(home, 'reserved');
    writeFiles(folder, { 'draft.txt': 'The second draft.' });
    const development = { agentId, knowledgeBaseId, environment: 'development' as const };
    // A run issued a link for the first draft, stopped, and lost its state file; the file changed since.
    await unwrap(
      api.POST('/api/v1/knowledge/documents/upload-link', {
        body: { ...development, fileName: 'draft.txt', customDocumentId: customDocumentIdOf('draft.txt') },
      }),
    );
    const run = await aps([
      'kb',
      'sync',
      folder,
      '--agent',
      agentId,
      '--kb',
      knowledgeBaseId,
      '--env',
      'development',
      '--json',
    ]);
    expect(run.code).toBe(1);
    expect((JSON.parse(run.stdout) as Summary).failed).toEqual([
      { path: 'draft.txt', code: 'UPLOAD_PENDING', message: expect.stringMatching(/sync again then$/) },
    ]);
  });
});

describe('aps query', () => {
  it('answers the hits of a query, filtered by label', async () => {
    const run = await aps([
      'query',
      'return an order within days',
      '--agent',
      agentId,
      '--kb',
      knowledgeBaseId,
      '--env',
      'production',
      '--filter',
      'label1=topic:refunds',
      '--json',
    ]);
    expect(run.code).toBe(0);
    const answer = JSON.parse(run.stdout) as { results: { content: string; metadata: { documentId: string } }[] };
    const returns = (await documentsByFileName()).get('returns.txt');
    expect(answer.results.map((hit) => hit.metadata.documentId)).toEqual([returns?.documentId]);

    const wifi = (await documentsByFileName()).get('wifi.txt') as DocumentFields;
    const text = await aps([
      'query',
      'wifi password',
      '--agent',
      agentId,
      '--kb',
      knowledgeBaseId,
      '--env',
      'production',
    ]);
    expect(text.code).toBe(0);
    const [first, excerpt] = text.stdout.split('\n');
    expect(first).toMatch(/^\[1\] score \d\.\d{3} {2}document /);
    expect(first.endsWith(`document ${wifi.documentId}  topic:misc`)).toBe(true);
    expect(excerpt).toBe('    The wifi password is printed on the back of the router.');
  });
});

describe('aps flows', () => {
  it('pulls, validates and pushes definitions as files, refusing to overwrite a newer version', async () => {
    const path = { agentId, environment: 'production' } as const;
    const stored = await api.PUT('/dashboard/agents/{agentId}/definition/{environment}', {
      params: { path },
      body: { flows: [refundFlow] } as never,
    });
    expect(stored.response.status).toBe(200);
    const folder = join(home, 'flows');

    const pull = await aps(['flows', 'pull', folder, '--agent', agentId]);
    expect(pull).toMatchObject({ code: 0, stdout: `pulled ${agentId}.production.json (version 1)\n` });
    const file = join(folder, `${agentId}.production.json`);
    const definition = JSON.parse(readFileSync(file, 'utf8')) as Definition;
    expect(definition.flows[0]).toMatchObject(refundFlow);

    definition.flows[0].nodes[0] = { ...definition.flows[0].nodes[0], displayName: 'Refund wanted' };
    writeFileSync(file, JSON.stringify(definition, null, 2));
    expect(await aps(['flows', 'validate', folder])).toMatchObject({
      code: 0,
      stdout: `valid ${agentId}.production.json\n`,
    });
    const push = await aps(['flows', 'push', folder]);
    expect(push).toMatchObject({ code: 0, stdout: `pushed ${agentId}.production.json: version 2\n` });
    expect(await aps(['flows', 'push', folder])).toMatchObject({
      stdout: `pushed ${agentId}.production.json: version 2 (unchanged)\n`,
    });

    // Round trip: what the service holds is the file.
    await aps(['flows', 'pull', join(home, 'flows-again')]);
    expect(JSON.parse(readFileSync(join(home, 'flows-again', `${agentId}.production.json`), 'utf8'))).toEqual(
      definition,
    );

    // Changed on the service since the pull: the push is refused, unless forced.
    await api.PUT('/dashboard/agents/{agentId}/definition/{environment}', {
      params: { path },
      body: { flows: [refundFlow], instructions: 'Changed in the console.' } as never,
    });
    definition.flows[0].nodes[0] = { ...definition.flows[0].nodes[0], displayName: 'Refund asked' };
    writeFileSync(file, JSON.stringify(definition, null, 2));
    const stale = await aps(['flows', 'push', folder]);
    expect(stale.code).toBe(1);
    expect(stale.stdout).toMatch(/^refused .*\.production\.json: VERSION_CONFLICT/);
    expect(await aps(['flows', 'push', folder, '--force'])).toMatchObject({
      code: 0,
      stdout: expect.stringMatching(/version 4\n$/),
    });

    // An invalid definition: validate names the problem, push stores nothing.
    writeFileSync(file, JSON.stringify({ ...definition, flows: [{ ...definition.flows[0], nodes: [] }] }));
    const invalid = await aps(['flows', 'validate', folder]);
    expect(invalid.code).toBe(1);
    expect(invalid.stdout).toMatch(/^invalid .*\n {2}flows/);
    const refused = await aps(['flows', 'push', folder]);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toMatch(/VALIDATION_ERROR/);
  });
});

describe('aps events export', () => {
  it('pages through an agent’s events into a CSV', async () => {
    for (let i = 0; i < 5; i += 1) {
      await unwrap(
        api.POST('/api/v1/events/track', {
          body: { agentId, eventName: 'export.test', payload: { n: i, note: 'a, "quoted" note' } },
        }),
      );
    }
    const csv = join(home, 'events.csv');
    const today = new Date().toISOString().slice(0, 10);
    const run = await aps([
      'events',
      'export',
      '--agent',
      agentId,
      '--from',
      today,
      '--to',
      today,
      '--event-name',
      'export.test',
      '--page-size',
      '2',
      '--csv',
      csv,
    ]);
    expect(run).toMatchObject({ code: 0, stdout: `5 events written to ${csv}\n` });
    const [header, ...rows] = parse(readFileSync(csv, 'utf8')) as string[][];
    expect(header).toEqual(['id', 'created_at', 'environment', 'sessionId', 'eventName', 'payload']);
    expect(rows.map((row) => row.slice(2, 5))).toEqual(Array(5).fill(['production', 'external', 'export.test']));
    expect(rows.map((row) => JSON.parse(row[5]))).toEqual(
      [4, 3, 2, 1, 0].map((n) => ({ n, note: 'a, "quoted" note' })),
    );
  });
});
