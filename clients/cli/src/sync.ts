/**
 * `aps kb sync <folder>`: the folder's files into one knowledge base in one environment, by content. Each file is a
 * document whose customDocumentId comes from its path, so an upload is the same document however often it is
 * tried. The folder's `.aps-sync.json` records, per dataset and path, the sha256 the service holds, the document, its
 * status, and an upload link issued and not yet completed; a file whose hash it records is not uploaded again, and a
 * run killed half-way resumes where it stopped (a link it holds is completed, not issued anew).
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { basename, join, posix, relative, resolve, sep } from 'node:path';
import {
  ApiError,
  type DocumentFields,
  type PlatformClient,
  type UploadLinkFields,
  unwrap,
} from '@agent-platform/client';
import { type Metadata, readLabelFile } from './labels';
import { type Progress, pool } from './progress';

export const STATE_FILE = '.aps-sync.json';

type Environment = 'development' | 'staging' | 'production';

export interface SyncOptions {
  readonly folder: string;
  readonly agentId: string;
  readonly knowledgeBaseId: string;
  readonly environment: Environment;
  readonly delete: boolean;
  readonly concurrency: number;
  readonly labelsCsv?: string;
  readonly label1?: string;
  readonly label2?: string;
  /** Wait for each upload to end `ready` or `failed`, at most this long; 0: do not wait. */
  readonly waitTimeoutMs: number;
}

interface PendingUpload extends UploadLinkFields {
  readonly kind: 'create' | 'update';
  /** The content the link was issued for. */
  readonly sha256: string;
  readonly issuedAt: string;
}

interface FileState {
  /** The content the service holds (its last completed upload); null until one completed. */
  sha256: string | null;
  customDocumentId: string;
  documentId: string | null;
  s3Key: string | null;
  status: 'uploaded' | 'ready' | 'failed' | null;
  error: { code: string; message: string } | null;
  /** The labels and custom metadata last set. */
  metadata: Metadata;
  pending: PendingUpload | null;
}

interface StateFile {
  version: 1;
  /** By `<agentId>/<environment>/<knowledgeBaseId>`: one folder may be synced into several. */
  datasets: Record<string, { files: Record<string, FileState> }>;
}

export interface SyncSummary {
  readonly agentId: string;
  readonly environment: Environment;
  readonly knowledgeBaseId: string;
  readonly files: number;
  readonly uploaded: string[];
  readonly metadataUpdated: string[];
  readonly unchanged: string[];
  readonly deleted: string[];
  /** Gone from the folder, still in the knowledge base: deleted only with --delete. */
  readonly notDeleted: string[];
  readonly ready: string[];
  readonly failed: { path: string; code: string; message: string }[];
  /** Still `uploaded` when the wait ended (or not waited for). */
  readonly processing: string[];
  readonly warnings: string[];
}

export function sha256(content: Uint8Array | string): string {
  return createHash('sha256').update(content).digest('hex');
}

/** A customDocumentId from a path: readable, within the API's rule, and distinct for distinct paths. */
export function customDocumentIdOf(path: string): string {
  const slug = path.replace(/[^A-Za-z0-9._:@-]+/g, '_').replace(/^[^A-Za-z0-9]+/, '');
  return `${slug.slice(0, 114) || 'file'}@${sha256(path).slice(0, 12)}`;
}

/** The folder's files, as `/`-separated paths relative to it; dot files and folders are not synced. */
export function filesOf(folder: string, skip: ReadonlySet<string> = new Set()): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.name.startsWith('.')) continue;
      const full = join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.isFile() && !skip.has(resolve(full)))
        found.push(relative(folder, full).split(sep).join(posix.sep));
    }
  };
  walk(folder);
  return found.sort();
}

export async function syncFolder(api: PlatformClient, options: SyncOptions, progress: Progress): Promise<SyncSummary> {
  const folder = resolve(options.folder);
  const dataset = {
    agentId: options.agentId,
    knowledgeBaseId: options.knowledgeBaseId,
    environment: options.environment,
  };
  const stateFile = join(folder, STATE_FILE);
  const state = readState(stateFile);
  const key = `${dataset.agentId}/${dataset.environment}/${dataset.knowledgeBaseId}`;
  state.datasets[key] ??= { files: {} };
  const known = state.datasets[key].files;
  const save = () => {
    const temporary = `${stateFile}.${process.pid}.tmp`;
    writeFileSync(temporary, `${JSON.stringify(state, null, 2)}\n`);
    renameSync(temporary, stateFile);
  };

  const labelsFile = options.labelsCsv ? resolve(options.labelsCsv) : undefined;
  const paths = filesOf(folder, new Set(labelsFile ? [labelsFile] : []));
  const labels = labelsFile ? readLabelFile(readFileSync(labelsFile, 'utf8'), paths) : undefined;
  const flagMetadata: Metadata = {
    ...(options.label1 !== undefined ? { label1: options.label1 || null } : {}),
    ...(options.label2 !== undefined ? { label2: options.label2 || null } : {}),
  };

  const summary: SyncSummary = {
    ...dataset,
    files: paths.length,
    uploaded: [],
    metadataUpdated: [],
    unchanged: [],
    deleted: [],
    notDeleted: [],
    ready: [],
    failed: [],
    processing: [],
    warnings: [...(labels?.warnings ?? [])],
  };

  type Task = { path: string; run: () => Promise<string> };
  const tasks: Task[] = [];
  for (const path of paths) {
    const content = readFileSync(join(folder, path));
    const hash = sha256(content);
    const row = labels?.byPath.get(path);
    const metadata: Metadata = row ? row.metadata : flagMetadata;
    const entry = known[path];
    if (entry && entry.customDocumentId !== (row?.customDocumentId ?? entry.customDocumentId)) {
      summary.warnings.push(`${path}: keeps customDocumentId ${entry.customDocumentId} (the labels name another)`);
    }
    const file: FileState = entry ?? {
      sha256: null,
      customDocumentId: row?.customDocumentId ?? customDocumentIdOf(path),
      documentId: null,
      s3Key: null,
      status: null,
      error: null,
      metadata: {},
      pending: null,
    };
    known[path] = file;
    if (file.sha256 !== hash) {
      tasks.push({
        path,
        run: async () => {
          await upload(api, dataset, path, file, content, hash, metadata, save);
          summary.uploaded.push(path);
          return waitFor(file);
        },
      });
    } else if (!sameMetadata(file.metadata, metadata)) {
      tasks.push({
        path,
        run: async () => {
          await unwrap(
            api.PATCH('/api/v1/knowledge/documents/metadata', {
              body: { ...dataset, customDocumentId: file.customDocumentId, ...metadata },
            }),
          );
          file.metadata = { ...file.metadata, ...metadata };
          save();
          summary.metadataUpdated.push(path);
          return waitFor(file);
        },
      });
    } else {
      summary.unchanged.push(path);
      if (file.status === 'uploaded') tasks.push({ path, run: () => waitFor(file) });
    }
  }

  const onDisk = new Set(paths);
  for (const path of Object.keys(known).filter((p) => !onDisk.has(p))) {
    const file = known[path];
    if (file.sha256 === null) {
      // Never completed: nothing to delete (its reservation ends by itself).
      delete known[path];
      continue;
    }
    if (!options.delete) {
      summary.notDeleted.push(path);
      continue;
    }
    tasks.push({
      path,
      run: async () => {
        try {
          await unwrap(
            api.DELETE('/api/v1/knowledge/documents', {
              params: { query: { ...dataset, customDocumentId: file.customDocumentId } },
            }),
          );
        } catch (error) {
          if (!(error instanceof ApiError && error.code === 'DOCUMENT_NOT_FOUND')) throw error;
        }
        delete known[path];
        save();
        summary.deleted.push(path);
        return 'deleted';
      },
    });
  }
  save();

  async function waitFor(file: FileState): Promise<string> {
    if (options.waitTimeoutMs <= 0) return file.status ?? 'uploaded';
    try {
      const document = (await api.waitForDocument(
        { ...dataset, customDocumentId: file.customDocumentId },
        { timeoutMs: options.waitTimeoutMs },
      )) as unknown as DocumentFields;
      file.status = document.status;
      file.error = document.error;
      save();
    } catch (error) {
      if ((error as Error).name !== 'WaitTimeoutError') throw error;
    }
    return file.status ?? 'uploaded';
  }

  progress.start(tasks.length);
  await pool(tasks, options.concurrency, async (task) => {
    try {
      progress.done(task.path, await task.run());
    } catch (error) {
      const failure = failureOf(error);
      const file = known[task.path];
      if (file && onDisk.has(task.path)) {
        // A file the API refused (a name without an extension, a label it does not accept): failed with the code.
        file.status = 'failed';
        file.error = failure;
        save();
      } else {
        summary.failed.push({ path: task.path, ...failure });
      }
      progress.done(task.path, `failed ${failure.code}`);
    }
  });
  progress.stop();

  for (const path of paths) {
    const file = known[path];
    if (file.status === 'ready') summary.ready.push(path);
    else if (file.status === 'failed') {
      summary.failed.push({
        path,
        code: file.error?.code ?? 'FAILED',
        message: file.error?.message ?? '',
      });
    } else summary.processing.push(path);
  }
  return summary;
}

async function upload(
  api: PlatformClient,
  dataset: { agentId: string; knowledgeBaseId: string; environment: Environment },
  path: string,
  file: FileState,
  content: Buffer,
  hash: string,
  metadata: Metadata,
  save: () => void,
): Promise<void> {
  const fileName = basename(path);
  const completed = (kind: 'create' | 'update', link: UploadLinkFields, documentId: string | null) => {
    file.sha256 = hash;
    file.documentId = documentId ?? file.documentId;
    file.s3Key = link.s3Key;
    file.status = 'uploaded';
    file.error = null;
    file.metadata = { ...(kind === 'update' ? file.metadata : {}), ...metadata };
    file.pending = null;
    save();
  };
  const complete = (kind: 'create' | 'update', uploadId: string) =>
    kind === 'create'
      ? unwrap(api.POST('/api/v1/knowledge/documents/upload-complete', { body: { uploadId } }))
      : unwrap(api.POST('/api/v1/knowledge/documents/update/upload-complete', { body: { uploadId } }));

  // A link issued for this very content by a run that stopped: PUT (once only; already there is fine), complete.
  const pending = file.pending;
  if (
    pending &&
    pending.sha256 === hash &&
    Date.parse(pending.issuedAt) + pending.expiresIn * 1000 > Date.now() + 5_000
  ) {
    try {
      await api.putUpload(pending, content).catch((error: unknown) => {
        if (!(error instanceof ApiError && error.code === 'PreconditionFailed')) throw error;
      });
      await complete(pending.kind, pending.uploadId);
      completed(pending.kind, pending, pending.documentId ?? null);
      return;
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      // Expired, never received, or gone: a new link below.
    }
  }

  const body = { ...dataset, ...metadata, fileName, fileSize: content.byteLength || undefined };
  let kind: 'create' | 'update' = file.sha256 === null ? 'create' : 'update';
  let link: UploadLinkFields | undefined;
  if (kind === 'create') {
    try {
      link = (await unwrap(
        api.POST('/api/v1/knowledge/documents/upload-link', {
          body: { ...body, customDocumentId: file.customDocumentId },
        }),
      )) as unknown as UploadLinkFields;
    } catch (error) {
      // The document exists (a run whose record of it was lost): its content is replaced instead.
      if (!(error instanceof ApiError && error.code === 'DUPLICATE_CUSTOM_DOCUMENT_ID')) throw error;
      kind = 'update';
    }
  }
  if (!link) {
    try {
      link = (await unwrap(
        api.POST('/api/v1/knowledge/documents/update/upload-link', {
          body: { ...body, customDocumentId: file.customDocumentId },
        }),
      )) as unknown as UploadLinkFields;
    } catch (error) {
      // Taken, yet no document: an upload-link of a run that stopped (for other content) still reserves the id.
      if (kind === 'update' && file.sha256 === null && error instanceof ApiError && error.status === 404) {
        throw new ApiError(
          409,
          'UPLOAD_PENDING',
          `customDocumentId ${file.customDocumentId} is reserved by an upload that was never completed ` +
            '(a sync stopped, then the file changed); the reservation ends with its upload session ' +
            '(UPLOAD_SESSION_TTL_SECONDS, an hour by default): sync again then',
        );
      }
      throw error;
    }
  }
  file.pending = { ...link, kind, sha256: hash, issuedAt: new Date().toISOString() };
  save();
  await api.putUpload(link, content);
  await complete(kind, link.uploadId);
  completed(kind, link, link.documentId ?? null);
}

function sameMetadata(held: Metadata, wanted: Metadata): boolean {
  return Object.entries(wanted).every(([field, value]) => (held[field as keyof Metadata] ?? null) === value);
}

function failureOf(error: unknown): { code: string; message: string } {
  if (error instanceof ApiError) {
    const details = error.details.map((d) => `${d.field}: ${d.message ?? d.rule}`).join('; ');
    return { code: error.code, message: details ? `${error.message} (${details})` : error.message };
  }
  return { code: 'CLIENT_ERROR', message: error instanceof Error ? error.message : String(error) };
}

function readState(file: string): StateFile {
  if (!existsSync(file)) return { version: 1, datasets: {} };
  const parsed = JSON.parse(readFileSync(file, 'utf8')) as StateFile;
  if (parsed.version !== 1 || typeof parsed.datasets !== 'object') {
    throw new Error(`${file} is not a state file of this aps (version 1)`);
  }
  return parsed;
}
