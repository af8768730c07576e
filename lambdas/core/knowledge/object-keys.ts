/**
 * Where a document's bytes live: the identity path `<agentId>/<environment>/<knowledgeBaseId>/<documentId>/<fileName>`,
 * later versions beside it, ZIP archives under `_imports`.
 */
import type { DatasetRef } from './document';
import type { Environment } from './fields';

/** `<agentId>/<environment>/<knowledgeBaseId>/<documentId>/<fileName>`: the identity path of a document. */
export function documentS3Key(ref: DatasetRef, documentId: string, fileName: string): string {
  return `${ref.agentId}/${ref.environment}/${ref.knowledgeBaseId}/${documentId}/${fileName}`;
}

/** Content of later versions lives beside the identity path; `_` cannot start a documentId, so nothing collides. */
export function versionObjectKey(s3Key: string, uploadId: string, fileName: string): string {
  return `${s3Key.slice(0, s3Key.lastIndexOf('/'))}/_versions/${uploadId}/${fileName}`;
}

export function zipObjectKey(ref: DatasetRef, zipJobId: string, fileName: string): string {
  return `${ref.agentId}/${ref.environment}/${ref.knowledgeBaseId}/_imports/${zipJobId}/${fileName}`;
}

export function parseS3Key(s3Key: string): (DatasetRef & { documentId: string }) | undefined {
  const parts = s3Key.split('/');
  if (parts.length !== 5) return undefined;
  const [agentId, environment, knowledgeBaseId, documentId] = parts;
  return { agentId, environment: environment as Environment, knowledgeBaseId, documentId };
}
