/**
 * The HTTP ingestion's uploads in a process of their own (bench/ingestion.ts, through bench/child-run.ts): for each
 * file upload-link, PUT to the pre-signed URL, upload-complete, `inFlight` files at once. Apart from the local
 * runtime, as the load's client is (bench/load-client.ts), so that the client's requests and JSON do not spend the
 * CPU of the process whose router serves them.
 */
import { mapLimited } from '../lib/map-limited';
import { apiClient } from './api-client';
import { childMain } from './child-run';
import { putObject, type UploadLink } from './put-object';

export interface UploadArguments {
  readonly baseUrl: string;
  readonly token: string;
  readonly path: string;
  readonly dataset: { readonly agentId: string; readonly environment: string; readonly knowledgeBaseId: string };
  readonly label1: string;
  readonly files: readonly { readonly fileName: string; readonly base64: string }[];
  readonly inFlight: number;
  readonly timeoutMs: number;
}

export interface Uploaded {
  /** The documents' s3Keys, in the order of the files. */
  readonly s3Keys: string[];
  /** Epoch ms of the first request and of the last upload-complete's answer. */
  readonly startedAt: number;
  readonly endedAt: number;
}

async function uploadAll(args: UploadArguments): Promise<Uploaded> {
  const call = apiClient(args.baseUrl, args.token, args.timeoutMs);
  const startedAt = Date.now();
  const s3Keys = await mapLimited(args.files, args.inFlight, async (file) => {
    const link = await call<UploadLink>('POST', `${args.path}/upload-link`, {
      body: { ...args.dataset, fileName: file.fileName, label1: args.label1 },
    });
    await putObject(link, Buffer.from(file.base64, 'base64'), args.timeoutMs);
    await call('POST', `${args.path}/upload-complete`, { body: { uploadId: link.uploadId } });
    return link.s3Key;
  });
  return { s3Keys, startedAt, endedAt: Date.now() };
}

childMain(uploadAll);
