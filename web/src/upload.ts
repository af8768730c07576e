/** An upload through the dashboard's three steps (upload-link → PUT to the pre-signed URL → upload-complete), with its progress. */
import { type Answer, type Api, ApiError, unwrap } from './api';
import type { Dataset, Metadata } from './knowledge';

type UploadLink = Answer<
  '/dashboard/agents/{agentId}/knowledge/{environment}/kb/{knowledgeBaseId}/documents/upload-link',
  'post'
>;

/** What upload-complete answers: the document (or, for a ZIP archive, the import) the upload became. */
export type UploadResult = Answer<'/dashboard/knowledge/upload-complete', 'post'>;

/** PUT the file to its pre-signed URL with the headers the link requires, reporting the bytes sent (fetch cannot). */
function putWithProgress(link: UploadLink, file: File, onProgress: (fraction: number) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const request = new XMLHttpRequest();
    request.open('PUT', link.uploadUrl);
    for (const [name, value] of Object.entries(link.requiredHeaders)) {
      // The browser sets Content-Length itself, from the body.
      if (name.toLowerCase() !== 'content-length') request.setRequestHeader(name, value);
    }
    request.upload.onprogress = (event) => {
      if (event.lengthComputable) onProgress(event.loaded / event.total);
    };
    request.onload = () => {
      if (request.status >= 200 && request.status < 300) resolve();
      else {
        const code = /<Code>([^<]{1,100})<\/Code>/.exec(request.responseText)?.[1] ?? `HTTP_${request.status}`;
        reject(new ApiError(request.status, code, `the storage refused the file (${code})`));
      }
    };
    request.onerror = () => reject(new ApiError(0, 'NETWORK_ERROR', 'the file could not be sent to the storage'));
    request.send(file);
  });
}

export type UploadStep = 'link' | 'put' | 'complete';

/** upload-link → PUT → upload-complete, through the dashboard's routes; labels apply to the document (or the ZIP). */
export async function uploadFile(
  api: Api,
  dataset: Dataset,
  file: File,
  labels: Partial<Metadata>,
  onStep: (step: UploadStep, fraction: number) => void,
): Promise<UploadResult> {
  onStep('link', 0);
  const link = await unwrap(
    api.POST('/dashboard/agents/{agentId}/knowledge/{environment}/kb/{knowledgeBaseId}/documents/upload-link', {
      params: { path: dataset },
      // An empty file declares no size (the API takes 1 byte or more): it is stored, then fails processing with its code.
      body: { fileName: file.name, ...(file.size > 0 ? { fileSize: file.size } : {}), ...labels },
    }),
  );
  onStep('put', 0);
  await putWithProgress(link, file, (fraction) => onStep('put', fraction));
  onStep('complete', 1);
  return unwrap(api.POST('/dashboard/knowledge/upload-complete', { body: { uploadId: link.uploadId } }));
}
