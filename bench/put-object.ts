/** The PUT of a file to an upload link's pre-signed URL, as a client of the API sends it (bench/ingestion.ts, costs.ts). */

/** What upload-link answers that the PUT needs. */
export interface UploadLink {
  readonly uploadId: string;
  readonly uploadUrl: string;
  readonly s3Key: string;
  readonly requiredHeaders: Record<string, string>;
}

/** PUTs `bytes` to the link's URL with its signed headers; anything but 200 is an error. */
export async function putObject(link: UploadLink, bytes: Buffer, timeoutMs = 60_000): Promise<void> {
  const response = await fetch(link.uploadUrl, {
    method: 'PUT',
    headers: link.requiredHeaders,
    body: bytes,
    signal: AbortSignal.timeout(timeoutMs),
  });
  if (response.status !== 200) throw new Error(`PUT ${link.s3Key}: ${response.status} ${await response.text()}`);
}
