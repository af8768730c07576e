/**
 * The chunk manifest of a document in a Bedrock knowledge base: Bedrock can neither list a document's chunks nor give
 * a chunk's text back, so the Bedrock index writes, beside what it ingests, one object per document in the documents
 * bucket with every chunk it ingested for it (text, position, labels, custom metadata), gzipped JSON, and keeps it in
 * step with its ingests, metadata changes and deletions. The chunk view reads it (docs/retrieval-aws.md, "The chunk
 * view"). Its key, `<agentId>/<environment>/<knowledgeBaseId>/<documentId>/_chunks/manifest.json.gz`, has six parts:
 * the processing queue's S3 events ignore it (core/processing/work.ts, `documentOfObjectKey`).
 */
import { gunzipSync, gzipSync } from 'node:zlib';
import type {
  ChunkGeneration,
  ChunkMetadata,
  DocumentChunkPage,
  DocumentChunkRange,
  DocumentRef,
  IndexedChunk,
  KnowledgeChunkListing,
} from '#ports/processing';
import { CHUNK_METADATA_KEYS } from '#ports/processing';
import type { BlobStore } from '#ports/services';

/** The part of every manifest key after the document's folder (the IAM grant of the chunk view names `*\/_chunks/*`). */
export const CHUNK_MANIFEST_FOLDER = '_chunks';
const MANIFEST_FILE = 'manifest.json.gz';
const VERSION = 1;
/** Reads of a manifest before one that is not whole is an error (see `read`). */
const MANIFEST_READS = 4;

type ManifestChunk = Pick<IndexedChunk, 'chunkId' | 's3Key' | 'position' | 'text'> & ChunkMetadata;

interface Manifest {
  readonly version: typeof VERSION;
  /** The upload the chunks are of; null when the record knew no upload (an older record). */
  readonly uploadId: string | null;
  /** In position order. */
  readonly chunks: readonly ManifestChunk[];
}

export function chunkManifestKey(ref: DocumentRef): string {
  return `${ref.agentId}/${ref.environment}/${ref.knowledgeBaseId}/${ref.documentId}/${CHUNK_MANIFEST_FOLDER}/${MANIFEST_FILE}`;
}

function manifestChunk(chunk: ManifestChunk, metadata: ChunkMetadata): ManifestChunk {
  const fields = { chunkId: chunk.chunkId, s3Key: chunk.s3Key, position: chunk.position, text: chunk.text };
  return { ...fields, ...Object.fromEntries(CHUNK_METADATA_KEYS.map((key) => [key, metadata[key]])) } as ManifestChunk;
}

/** The manifests of the documents bucket; as a KnowledgeChunkListing, the chunk view of a Bedrock deployment. */
export class ChunkManifests implements KnowledgeChunkListing {
  constructor(private readonly blobs: Pick<BlobStore, 'get' | 'put' | 'delete'>) {}

  /** Makes `chunks` (of upload `uploadId`) the document's manifest. */
  async write(ref: DocumentRef, uploadId: string | null, chunks: readonly IndexedChunk[]): Promise<void> {
    const ordered = [...chunks].sort((a, b) => a.position - b.position).map((chunk) => manifestChunk(chunk, chunk));
    await this.put(ref, { version: VERSION, uploadId, chunks: ordered });
  }

  /** The metadata Bedrock's chunks now carry, on the manifest's chunks too (of `uploadId` only, when given). */
  async setMetadata(ref: DocumentRef, metadata: ChunkMetadata, uploadId?: string): Promise<void> {
    const manifest = await this.read(ref);
    if (!manifest || (uploadId !== undefined && manifest.uploadId !== null && manifest.uploadId !== uploadId)) return;
    await this.put(ref, { ...manifest, chunks: manifest.chunks.map((chunk) => manifestChunk(chunk, metadata)) });
  }

  async remove(ref: DocumentRef): Promise<void> {
    await this.blobs.delete([chunkManifestKey(ref)]);
  }

  /** Removes the manifest when it is of one of these uploads (their chunks are being removed). */
  async removeUploads(ref: DocumentRef, uploads: readonly ChunkGeneration[]): Promise<void> {
    const manifest = await this.read(ref);
    if (manifest && uploads.some((upload) => upload.uploadId === manifest.uploadId)) await this.remove(ref);
  }

  /** A page of the document's chunks; undefined when the document has no manifest (indexed before they were kept). */
  async listDocumentChunks(ref: DocumentRef, range: DocumentChunkRange): Promise<DocumentChunkPage | undefined> {
    const manifest = await this.read(ref);
    if (!manifest) return undefined;
    const after = range.afterPosition;
    const start = after === null ? 0 : manifest.chunks.findIndex((chunk) => chunk.position > after);
    const chunks = start < 0 ? [] : manifest.chunks.slice(start, start + range.limit);
    return {
      chunks: chunks.map((chunk) => ({
        agentId: ref.agentId,
        environment: ref.environment,
        knowledgeBaseId: ref.knowledgeBaseId,
        documentId: ref.documentId,
        ...chunk,
      })),
      total: manifest.chunks.length,
    };
  }

  /**
   * The manifest, read again (up to MANIFEST_READS times) when what was read is not a whole one: S3 replaces an object
   * at once, but s3rver (the local engine) writes it in place, so a reader can meet a manifest half rewritten by a
   * document's reprocessing. A manifest still unreadable after that is an error.
   */
  private async read(ref: DocumentRef): Promise<Manifest | undefined> {
    for (let attempt = 1; ; attempt++) {
      try {
        const bytes = await this.blobs.get(chunkManifestKey(ref));
        if (!bytes) return undefined;
        const manifest = JSON.parse(gunzipSync(bytes).toString('utf8')) as Manifest;
        return manifest.version === VERSION ? manifest : undefined;
      } catch (error) {
        if (attempt >= MANIFEST_READS) throw error;
        await new Promise((resolve) => setTimeout(resolve, 50 * attempt));
      }
    }
  }

  private async put(ref: DocumentRef, manifest: Manifest): Promise<void> {
    await this.blobs.put(chunkManifestKey(ref), gzipSync(JSON.stringify(manifest)), 'application/gzip');
  }
}
