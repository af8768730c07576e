/**
 * What a processing-queue message asks for. Two shapes arrive: the service's own messages (ProcessingMessage) and
 * S3's object-created notifications. An S3 event for a document's object is processing work only once
 * upload-complete has made that object the document's content; before that the event is dropped, and
 * upload-complete queues the work itself. So both paths lead to the same, idempotent, processing.
 */

import { ENVIRONMENTS, type Environment } from '#core/knowledge/fields';
import type { ProcessingMessage } from '#ports/services';

export type Work =
  | { readonly kind: 'message'; readonly message: ProcessingMessage }
  | {
      readonly kind: 's3-object';
      readonly objectKey: string;
      readonly agentId: string;
      readonly environment: Environment;
      readonly knowledgeBaseId: string;
      readonly documentId: string;
    }
  | { readonly kind: 'ignore'; readonly reason: string };

const MESSAGE_KINDS = new Set([
  'process-document',
  'confirm-indexed',
  'sync-metadata',
  'delete-document',
  'process-zip',
  'delete-knowledge-base',
  'reindex-knowledge-base',
  'delete-agent',
  'check-zip-completion',
]);

interface S3Record {
  eventName?: string;
  s3?: { object?: { key?: string } };
}

/** Object keys of documents: `<agent>/<env>/<kb>/<doc>/<file>` or `<agent>/<env>/<kb>/<doc>/_versions/<upload>/<file>`. */
export function documentOfObjectKey(
  objectKey: string,
): Omit<Extract<Work, { kind: 's3-object' }>, 'kind' | 'objectKey'> | undefined {
  const parts = objectKey.split('/');
  const isDocument = parts.length === 5 || (parts.length === 7 && parts[4] === '_versions');
  if (!isDocument || parts[3].startsWith('_')) return undefined;
  const [agentId, environment, knowledgeBaseId, documentId] = parts;
  if (!(ENVIRONMENTS as readonly string[]).includes(environment)) return undefined;
  return { agentId, environment: environment as Environment, knowledgeBaseId, documentId };
}

/** The work items of one queue message body; never throws (a body nobody can act on is ignored with a reason). */
export function parseWork(body: string): Work[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return [{ kind: 'ignore', reason: 'message body is not JSON' }];
  }
  if (parsed && typeof parsed === 'object' && 'Records' in parsed && Array.isArray(parsed.Records)) {
    return (parsed.Records as S3Record[]).map((record): Work => {
      const rawKey = record.s3?.object?.key;
      if (!record.eventName?.startsWith('ObjectCreated:') || !rawKey) {
        return { kind: 'ignore', reason: `S3 event ${record.eventName ?? 'without a name'}` };
      }
      // S3 notifications carry the key URL-encoded, with spaces as '+'.
      const objectKey = decodeURIComponent(rawKey.replace(/\+/g, ' '));
      const document = documentOfObjectKey(objectKey);
      return document
        ? { kind: 's3-object', objectKey, ...document }
        : { kind: 'ignore', reason: `object ${objectKey} is no document` };
    });
  }
  if (parsed && typeof parsed === 'object' && 'Event' in parsed && parsed.Event === 's3:TestEvent') {
    return [{ kind: 'ignore', reason: 'S3 test event' }];
  }
  if (parsed && typeof parsed === 'object' && 'kind' in parsed && MESSAGE_KINDS.has(String(parsed.kind))) {
    return [{ kind: 'message', message: parsed as ProcessingMessage }];
  }
  return [{ kind: 'ignore', reason: 'unknown message shape' }];
}
