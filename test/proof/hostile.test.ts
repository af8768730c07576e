/**
 * Hostile input through the public API, as an attacker holding an ordinary token would send it (issue 22): each file
 * of hostile-files.ts is uploaded to the running local runtime and must end `ready` or `failed` with its code, on
 * its first delivery, within a deadline; meanwhile `/health` answers in under a second every time, the memory of
 * the worker (the runtime process and its extraction child) stays under the processing function's 2,048 MB, and an
 * ordinary document uploaded afterwards reaches `ready`. Figures: `[hostile]` lines on stderr (docs/proof.md).
 */
import { readFileSync } from 'node:fs';
import { createDataset, type Dataset, putFile, type UploadLink, uploadDocument } from '../helpers/fixtures';
import { pollUntil } from '../helpers/poll';
import { client, startService, type TestService } from '../helpers/service';
import { buildZip, renameEntry } from '../helpers/zip-archives';
import {
  deeplyNestedHtml,
  docxBillionLaughs,
  docxDeeplyNested,
  docxExternalEntity,
  docxInflationBomb,
  docxLyingSizes,
  type HostileFile,
  pdfInflationBomb,
  pdfRepeatedPage,
  regexHtmlBomb,
  zipOfManySmallBombs,
} from './hostile-files';
import { printFigures, proofSize } from './size';

const DOCS = '/api/v1/knowledge/documents';
/** The processing function's memory in AWS (lib/constructs/document-processing.ts). */
const FUNCTION_MEMORY_MB = 2048;
const EXTRACTION_TIMEOUT_SECONDS = proofSize(20, 60);
const MAX_ARCHIVE_BYTES = 2 * 1024 * 1024;

let service: TestService;
let call: ReturnType<typeof client>;
let dataset: Dataset;

/** Polls `/health` every 100 ms while the suite runs; the slowest answer is what the API cost a caller. */
const health = { slowestMs: 0, checks: 0, failures: 0 };
/** Peak resident memory of the runtime process, of any extraction child, and of both together. */
const memory = { runtimeMb: 0, childMb: 0, togetherMb: 0 };
let monitors: NodeJS.Timeout[] = [];
const figures: string[] = [];

beforeAll(async () => {
  service = await startService({
    env: {
      EXTRACTION_TIMEOUT_SECONDS: String(EXTRACTION_TIMEOUT_SECONDS),
      ZIP_MAX_ARCHIVE_BYTES: String(MAX_ARCHIVE_BYTES),
    },
  });
  call = client(service);
  dataset = await createDataset(call);
  monitors = [watchHealth(service.baseUrl), watchMemory(service.pid as number)];
});

afterAll(async () => {
  for (const timer of monitors) clearInterval(timer);
  printFigures('hostile', [
    ...figures,
    `/health: ${health.checks} checks, slowest ${health.slowestMs} ms, ${health.failures} not 200`,
    `peak memory: runtime process ${memory.runtimeMb} MB, extraction child ${memory.childMb} MB, together ${memory.togetherMb} MB (function: ${FUNCTION_MEMORY_MB} MB)`,
  ]);
  await service?.stop();
});

function watchHealth(baseUrl: string): NodeJS.Timeout {
  let inFlight = false;
  return setInterval(async () => {
    if (inFlight) return;
    inFlight = true;
    const started = performance.now();
    try {
      const answer = await fetch(`${baseUrl}/health`, { signal: AbortSignal.timeout(5_000) });
      if (answer.status !== 200) health.failures += 1;
    } catch {
      health.failures += 1;
    } finally {
      health.slowestMs = Math.max(health.slowestMs, Math.round(performance.now() - started));
      health.checks += 1;
      inFlight = false;
    }
  }, 100);
}

function residentMb(pid: number): number {
  try {
    const line = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return line ? Math.round(Number(line[1]) / 1024) : 0;
  } catch {
    return 0; // gone meanwhile
  }
}

function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

function watchMemory(pid: number): NodeJS.Timeout {
  return setInterval(() => {
    const runtime = residentMb(pid);
    const child = Math.max(0, ...childrenOf(pid).map(residentMb));
    memory.runtimeMb = Math.max(memory.runtimeMb, runtime);
    memory.childMb = Math.max(memory.childMb, child);
    memory.togetherMb = Math.max(memory.togetherMb, runtime + child);
  }, 50);
}

type DocumentBody = { status: string; error: { code: string; message: string } | null };

/** Uploads `file` as a document and waits for its final status; returns it with the seconds it took. */
async function processed(file: HostileFile) {
  const { link } = await uploadDocument(call, dataset, { fileName: file.fileName }, file.bytes);
  const started = performance.now();
  const final = await pollUntil(
    () => call<DocumentBody>('GET', DOCS, { query: { ...dataset, s3Key: link.s3Key } }),
    (answer) => answer.body.status !== 'uploaded',
    (EXTRACTION_TIMEOUT_SECONDS + 60) * 1000,
  );
  const seconds = (performance.now() - started) / 1000;
  figures.push(
    `${file.name} (${file.what}): ${final.body.status}${final.body.error ? ` ${final.body.error.code}` : ''} after ${seconds.toFixed(1)} s`,
  );
  return { ...final.body, seconds };
}

const DEADLINE_MS = (EXTRACTION_TIMEOUT_SECONDS + 90) * 1000;

describe('hostile documents end with their code on the first delivery', () => {
  it('281 bytes of empty HTML comments (the backtracking regex) are read as text: ready', async () => {
    expect(await processed(regexHtmlBomb(40))).toMatchObject({ status: 'ready' });
  });

  it('HTML nested 100,000 deep (a RangeError in the parser): failed PARSE_ERROR, not retried', async () => {
    expect(await processed(deeplyNestedHtml(100_000))).toMatchObject({
      status: 'failed',
      error: { code: 'PARSE_ERROR', message: expect.stringContaining('nested too deeply') },
    });
  });

  it.each([
    ['a DOCX whose XML inflates to 95 MiB', 'FILE_TOO_LARGE', () => docxInflationBomb(95)],
    ['a DOCX that lies about its sizes', 'PARSE_ERROR', () => docxLyingSizes(95)],
    ['a DOCX of a billion XML entities', 'PARSE_ERROR', docxBillionLaughs],
    ['a DOCX with an external XML entity', 'PARSE_ERROR', docxExternalEntity],
    ['a DOCX nested 100,000 deep', 'PARSE_ERROR', () => docxDeeplyNested(100_000)],
    ['a PDF listing one page 200,000 times', 'FILE_TOO_LARGE', async () => pdfRepeatedPage(200_000)],
  ])('%s: failed %s', async (_, code, make) => {
    expect(await processed(await make())).toMatchObject({ status: 'failed', error: { code } });
  });

  it('a PDF whose content stream inflates to 350 MiB: stopped by the memory or time limit, failed', async () => {
    const outcome = await processed(await pdfInflationBomb(350));
    expect(outcome.status).toBe('failed');
    expect(['FILE_TOO_LARGE', 'EXTRACTION_TIMEOUT']).toContain(outcome.error?.code);
  });

  it('no message was delivered twice: every file ended on its first delivery', () => {
    expect(service.output()).not.toContain('delivered again');
  });
});

describe('hostile archives', () => {
  type Job = {
    status: string;
    error: { code: string } | null;
    files: { fileName: string; status: string; error: { code: string } | null }[];
  };

  async function imported(name: string, archive: Buffer) {
    const link = await call<UploadLink>('POST', `${DOCS}/upload-link`, { body: { ...dataset, fileName: 'batch.zip' } });
    expect((await putFile(link.body, archive)).status).toBe(200);
    expect((await call('POST', `${DOCS}/upload-complete`, { body: { uploadId: link.body.uploadId } })).status).toBe(
      200,
    );
    const started = performance.now();
    const job = await pollUntil(
      () => call<Job>('GET', `/api/v1/knowledge/zip-jobs/${link.body.zipJobId}`),
      (answer) =>
        answer.body.status === 'failed' ||
        (answer.body.status === 'completed' && answer.body.files.every((f) => f.status !== 'uploaded')),
      DEADLINE_MS,
    );
    figures.push(
      `${name} (${archive.length} bytes): ${job.body.status}${job.body.error ? ` ${job.body.error.code}` : ''} after ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
    return job.body;
  }

  it('499 entries of 1 MiB each in 0.6 MB (each under the per-entry ratio floor): failed ARCHIVE_TOO_LARGE, nothing imported', async () => {
    const archive = await zipOfManySmallBombs(499, 1024 * 1024);
    const job = await imported('zip-many-entries', archive.bytes);
    expect(job).toMatchObject({ status: 'failed', error: { code: 'ARCHIVE_TOO_LARGE' }, files: [] });
  });

  it('an archive over the archive size limit: failed ARCHIVE_TOO_LARGE from its size alone', async () => {
    // Bytes that do not compress, so the archive itself is over the limit.
    const noise = Buffer.alloc(MAX_ARCHIVE_BYTES + 1024);
    for (let i = 0, x = 7; i < noise.length; i++) {
      x = (x * 1103515245 + 12345) >>> 0;
      noise[i] = x >>> 24;
    }
    const job = await imported('zip-over-size', await buildZip([{ name: 'noise.txt', data: noise, compress: false }]));
    expect(job).toMatchObject({ status: 'failed', error: { code: 'ARCHIVE_TOO_LARGE' }, files: [] });
  });

  it('entries with names no upload may have fail one by one (INVALID_FILE_NAME); the others are imported', async () => {
    const long = `${'n'.repeat(2000)}.txt`;
    const built = await buildZip([
      { name: 'first.txt', data: 'The first file of the archive.' },
      { name: long, data: 'A 2,004-byte name.' },
      { name: 'x', data: 'A file named dot.' },
      { name: 'uni___gnp.txt', data: 'A right-to-left override.' },
      { name: 'last.txt', data: 'The last file of the archive.' },
    ]);
    const archive = renameEntry(renameEntry(built, 'x', '.'), 'uni___gnp.txt', 'uni\u202Egnp.txt');
    const job = await imported('zip-bad-names', archive);
    expect(job.status).toBe('completed');
    expect(
      job.files.map((f) => [f.fileName.length > 100 ? 'long' : f.fileName, f.status, f.error?.code ?? null]),
    ).toEqual([
      ['first.txt', 'ready', null],
      ['long', 'failed', 'INVALID_FILE_NAME'],
      ['.', 'failed', 'INVALID_FILE_NAME'],
      ['uni\u202Egnp.txt', 'failed', 'INVALID_FILE_NAME'],
      ['last.txt', 'ready', null],
    ]);
  });
});

describe('names that crashed the local runtime', () => {
  it.each([
    ["'é' × 125 + '.txt' (129 characters, 254 bytes)", `${'é'.repeat(125)}.txt`, 'fileName.maxBytes'],
    ['245 ASCII characters', `${'a'.repeat(241)}.txt`, 'fileName.maxBytes'],
    ['a right-to-left override', 'uni\u202Egnp.txt', 'fileName.bidiControl'],
  ])('%s: 400 at upload-link', async (_, fileName, rule) => {
    const answer = await call('POST', `${DOCS}/upload-link`, { body: { ...dataset, fileName } });
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ error: { code: 'VALIDATION_ERROR', details: [{ field: 'fileName', rule }] } });
  });
});

describe('afterwards', () => {
  it('an ordinary document reaches ready', async () => {
    const { link } = await uploadDocument(
      call,
      dataset,
      { fileName: 'after.txt' },
      'Hold the power button for five seconds.',
    );
    const final = await pollUntil(
      () => call<DocumentBody>('GET', DOCS, { query: { ...dataset, s3Key: link.s3Key } }),
      (answer) => answer.body.status !== 'uploaded',
    );
    expect(final.body).toMatchObject({ status: 'ready', error: null });
  });

  it('/health answered 200 in under a second every time', () => {
    expect(health.checks).toBeGreaterThan(50);
    expect(health).toMatchObject({ failures: 0 });
    expect(health.slowestMs).toBeLessThan(1000);
  });

  it(`the worker's memory stayed under the processing function's ${FUNCTION_MEMORY_MB} MB`, () => {
    expect(memory.childMb).toBeGreaterThan(0); // the monitor saw the extraction child
    expect(memory.togetherMb).toBeLessThan(FUNCTION_MEMORY_MB);
  });
});
