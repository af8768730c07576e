/**
 * When `zip_import.completed` is published (core/webhooks/publish.ts): the unfinished documents come from an index
 * that may lag, so the finishing document's own entry is discounted, and one or two others still listed make the
 * question asked again a few seconds later instead of answered "not yet" for good.
 */

import type { StatusEvent } from '#core/webhooks/events';
import { publishZipImportIfCompleted, ZIP_COMPLETION_RECHECK_SECONDS } from '#core/webhooks/publish';
import type { ProcessingMessage } from '#ports/services';
import type { ZipJobRecord } from '#ports/zip-jobs';

const JOB = 'job-1';

function harness(unfinished: string[], job: Partial<ZipJobRecord> = {}) {
  const published: StatusEvent[] = [];
  const queued: { message: ProcessingMessage; delaySeconds?: number }[] = [];
  const record = {
    zipJobId: JOB,
    organizationId: 'org-1',
    agentId: 'agent-1',
    environment: 'production',
    knowledgeBaseId: 'kb-1',
    status: 'processing',
    fileCount: 4,
    ...job,
  } as ZipJobRecord;
  const jobReads = { count: 0 };
  const deps = {
    statusEvents: { publish: async (event: StatusEvent) => void published.push(event) },
    zipJobs: {
      get: async () => {
        jobReads.count++;
        return record;
      },
    },
    documents: {
      zipImportUnfinished: async (_id: string, limit: number) => unfinished.slice(0, limit),
      zipImportFailures: async () => 1,
    },
    queue: {
      send: async (message: ProcessingMessage, options?: { delaySeconds?: number }) =>
        void queued.push({ message, ...options }),
    },
    clock: { now: () => new Date('2026-11-29T08:00:00.000Z') },
  };
  return { deps, published, queued, jobReads };
}

it('publishes once no document is unfinished, not counting the one that just finished', async () => {
  const h = harness(['doc-last']);
  await publishZipImportIfCompleted(h.deps, JOB, 'doc-last');
  expect(h.published).toEqual([
    expect.objectContaining({
      type: 'zip_import.completed',
      data: expect.objectContaining({ fileCount: 4, failedCount: 1 }),
    }),
  ]);
  expect(h.queued).toEqual([]);
});

it('asks again a few seconds later when one or two others are still listed', async () => {
  const h = harness(['doc-last', 'doc-other']);
  await publishZipImportIfCompleted(h.deps, JOB, 'doc-last');
  expect(h.published).toEqual([]);
  expect(h.queued).toEqual([
    {
      message: {
        kind: 'check-zip-completion',
        agentId: 'agent-1',
        environment: 'production',
        knowledgeBaseId: 'kb-1',
        zipJobId: JOB,
      },
      delaySeconds: ZIP_COMPLETION_RECHECK_SECONDS,
    },
  ]);
});

it('neither publishes nor asks again while many are unfinished, nor when asked again and still unfinished', async () => {
  const many = harness(['a', 'b', 'c', 'd']);
  await publishZipImportIfCompleted(many.deps, JOB, 'z');
  const again = harness(['a']);
  await publishZipImportIfCompleted(again.deps, JOB);
  expect([...many.published, ...many.queued, ...again.published, ...again.queued]).toEqual([]);
});

it('reads the job only when two or fewer others are left: not once a document of a large import', async () => {
  const many = harness(['a', 'b', 'c', 'd']);
  await publishZipImportIfCompleted(many.deps, JOB, 'z');
  expect(many.jobReads.count).toBe(0);
  const few = harness(['doc-last', 'doc-other']);
  await publishZipImportIfCompleted(few.deps, JOB, 'doc-last');
  expect(few.jobReads.count).toBe(1);
});

it('publishes nothing for an import not read through yet, or failed', async () => {
  const unread = harness([], { fileCount: null });
  await publishZipImportIfCompleted(unread.deps, JOB);
  const failed = harness([], { status: 'failed' });
  await publishZipImportIfCompleted(failed.deps, JOB);
  expect([...unread.published, ...failed.published]).toEqual([]);
});
