/** An ArchiveStore (a BlobStore that downloads) over a Map, for use-case tests that need objects but not S3; downloads go to real temporary files. */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ArchiveStore, ObjectTooLargeError } from '#ports/services';

export function inMemoryBlobStore(
  objects = new Map<string, Buffer>(),
): ArchiveStore & { objects: Map<string, Buffer> } {
  return {
    objects,
    presignPut: async () => {
      throw new Error('an in-memory store issues no URLs');
    },
    head: async (key) => {
      const bytes = objects.get(key);
      return bytes && { size: bytes.length, contentType: null };
    },
    get: async (key) => objects.get(key),
    download: async (key, maxBytes) => {
      const bytes = objects.get(key);
      if (!bytes) return undefined;
      if (bytes.length > maxBytes) throw new ObjectTooLargeError(key, maxBytes);
      const dir = await mkdtemp(join(tmpdir(), 'aps-blob-'));
      const path = join(dir, 'object');
      await writeFile(path, bytes);
      return { path, size: bytes.length, remove: () => rm(dir, { recursive: true, force: true }) };
    },
    put: async (key, bytes) => {
      objects.set(key, bytes);
    },
    markCompleted: async () => undefined,
    delete: async (keys) => {
      for (const key of keys) objects.delete(key);
    },
  };
}
