/**
 * GET /knowledge/documents. Primary course: the document the request names, as the API shows it.
 */
import type { Caller } from '#core/tenancy/tenancy';
import { type DatasetRef, type DocumentView, documentView } from './document';
import { findDocument } from './find-document';
import type { DocumentIdentifier, KnowledgeDeps } from './knowledge-deps';

/** GET /knowledge/documents */
export async function getDocument(
  deps: KnowledgeDeps,
  caller: Caller,
  request: DatasetRef & DocumentIdentifier,
): Promise<DocumentView> {
  return documentView(await findDocument(deps, caller, request));
}
