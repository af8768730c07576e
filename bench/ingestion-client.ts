/**
 * The HTTP ingestion's uploads in a process of their own (bench/ingestion.ts, through bench/child-run.ts): for each
 * file upload-link, PUT to the pre-signed URL, upload-complete, `inFlight` files at once. Apart from the local
 * runtime, as the load's client is (bench/load-client.ts), so that the client's requests and JSON do not spend the
 * CPU of the process whose router serves them.
 */
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
  const post = async <T>(path: string, body: unknown): Promise<T> => {
    const response = await fetch(args.baseUrl + path, {
      method: 'POST',
      headers: { authorization: `Bearer ${args.token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(args.timeoutMs),
    });
    const text = await response.text();
    if (response.status !== 200) throw new Error(`POST ${path}: ${response.status} ${text}`);
    return JSON.parse(text) as T;
  };
  const s3Keys = new Array<string>(args.files.length);
  let next = 0;
  const startedAt = Date.now();
  const lane = async () => {
    while (next < args.files.length) {
      const i = next++;
      const file = args.files[i];
      const link = await post<UploadLink>(`${args.path}/upload-link`, {
        ...args.dataset,
        fileName: file.fileName,
        label1: args.label1,
      });
      await putObject(link, Buffer.from(file.base64, 'base64'), args.timeoutMs);
      await post(`${args.path}/upload-complete`, { uploadId: link.uploadId });
      s3Keys[i] = link.s3Key;
    }
  };
  await Promise.all(Array.from({ length: Math.min(args.inFlight, args.files.length) }, lane));
  return { s3Keys, startedAt, endedAt: Date.now() };
}

childMain(uploadAll);
