/**
 * GET /api/v1/knowledge/zip-jobs (the list) against the local runtime with its worker in a process of its own
 * (LOCAL_WORKER=off), so each state can be held still: a job's status in the list is the one GET of the job answers,
 * before the worker reads the archive, once its documents finished, when a retry makes one unfinished again, and when
 * that document is deleted. Pages are newest first and their tokens bound to their list.
 */
import { createDataset, type Dataset, putFile, type UploadLink, zipOf } from '../helpers/fixtures';
import { pollUntil } from '../helpers/poll';
import { client, type TestService } from '../helpers/service';
import { startServiceForWorker, startWorker, type TestWorker } from '../helpers/worker';

const DOCS = '/api/v1/knowledge/documents';
const JOBS = '/api/v1/knowledge/zip-jobs';
let service: TestService;
let call: ReturnType<typeof client>;
let dataDir: string;
let stopService: (() => Promise<void>) | undefined;
let worker: TestWorker | undefined;
let dataset: Dataset;

interface Job {
  zipJobId: string;
  status: string;
  fileCount: number | null;
  createdAt: string;
  files: { fileName: string; s3Key: string | null; status: string }[];
}
interface JobList {
  data: Omit<Job, 'files'>[];
  count: number;
  nextToken: string | null;
}

beforeAll(async () => {
  ({ service, dataDir, stop: stopService } = await startServiceForWorker('aps-zip-list-'));
  call = client(service);
  dataset = await createDataset(call);
});
afterAll(async () => {
  await worker?.stop();
  await stopService?.();
});

async function uploadArchive(fileName: string, files: Record<string, string | Buffer>): Promise<string> {
  const link = await call<UploadLink>('POST', `${DOCS}/upload-link`, { body: { ...dataset, fileName } });
  expect(link.status).toBe(200);
  expect((await putFile(link.body, await zipOf(files))).status).toBe(200);
  expect((await call('POST', `${DOCS}/upload-complete`, { body: { uploadId: link.body.uploadId } })).status).toBe(200);
  return link.body.zipJobId as string;
}

const list = (query: Record<string, string> = {}) => call<JobList>('GET', JOBS, { query: { ...dataset, ...query } });
const getJob = (zipJobId: string) => call<Job>('GET', `${JOBS}/${zipJobId}`);

/** The list's status of each job equals GET's; returns the statuses by job. */
async function sameAsGet(): Promise<Record<string, string>> {
  const listed = await list();
  expect(listed.status).toBe(200);
  const statuses: Record<string, string> = {};
  for (const job of listed.body.data) {
    const got = await getJob(job.zipJobId);
    expect({ zipJobId: job.zipJobId, status: job.status }).toEqual({ zipJobId: job.zipJobId, status: got.body.status });
    statuses[job.zipJobId] = job.status;
  }
  return statuses;
}

it('answers each job with the status GET gives it, through reading, finishing, a retry and a delete', async () => {
  const first = await uploadArchive('first.zip', { 'a.txt': 'Alpha text.', 'b.txt': 'Beta text.' });
  const second = await uploadArchive('second.zip', { 'c.txt': 'Gamma text.', 'broken.pdf': '%PDF-1.7\nnot a pdf' });

  // No worker yet: both wait, newest first, their archives not read (no file count).
  const waiting = await list();
  expect(waiting.body.data.map((job) => [job.zipJobId, job.status, job.fileCount])).toEqual([
    [second, 'uploaded', null],
    [first, 'uploaded', null],
  ]);
  expect(await sameAsGet()).toEqual({ [first]: 'uploaded', [second]: 'uploaded' });

  worker = await startWorker(dataDir);
  await pollUntil(
    () => list(),
    (r) => r.body.data.every((job) => job.status === 'completed'),
    60_000,
  );
  expect(await sameAsGet()).toEqual({ [first]: 'completed', [second]: 'completed' });
  expect((await list()).body.data.map((job) => job.fileCount)).toEqual([2, 2]);

  // Without a worker again: a retry of the failed file makes its import unfinished...
  await worker.stop();
  worker = undefined;
  const broken = (await getJob(second)).body.files.find((file) => file.fileName === 'broken.pdf');
  expect(broken).toMatchObject({ status: 'failed' });
  const retried = await call('POST', `${DOCS}/retry`, { body: { ...dataset, s3Key: broken?.s3Key } });
  expect(retried.status).toBe(200);
  const statuses = await sameAsGet();
  expect(statuses[second]).not.toBe('completed');
  expect(statuses[first]).toBe('completed');

  // ...and deleting that document finishes it again (the file shows as replaced).
  expect((await call('DELETE', DOCS, { body: { ...dataset, s3Key: broken?.s3Key } })).status).toBe(200);
  expect(await sameAsGet()).toEqual({ [first]: 'completed', [second]: 'completed' });
});

it('pages newest first, and refuses a token of another list', async () => {
  const page1 = await list({ limit: '1' });
  expect(page1.body.count).toBe(1);
  expect(page1.body.nextToken).toEqual(expect.any(String));
  const page2 = await list({ limit: '1', nextToken: page1.body.nextToken as string });
  expect(page2.body.data[0].createdAt <= page1.body.data[0].createdAt).toBe(true);
  expect(page2.body.data[0].zipJobId).not.toBe(page1.body.data[0].zipJobId);
  expect(page2.body.nextToken).toBeNull();

  const elsewhere = await call('GET', JOBS, {
    query: { ...dataset, environment: 'staging', nextToken: page1.body.nextToken as string },
  });
  expect(elsewhere.status).toBe(400);
  expect(elsewhere.body).toMatchObject({ error: { details: [{ field: 'nextToken', rule: 'nextToken.query' }] } });
  const other = await createDataset(call);
  const empty = await call<JobList>('GET', JOBS, { query: { ...other } });
  expect(empty.body).toMatchObject({ data: [], count: 0, nextToken: null });
});
