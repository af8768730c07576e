/**
 * Real ZIP archives for the ZIP tests, built with yazl, and byte patches for what yazl refuses to write (`../`
 * names, absolute paths, encrypted flags). Patches walk the central directory, so they touch headers, never data.
 */
import { Readable } from 'node:stream';
import * as yazl from 'yazl';

export interface ArchiveItem {
  readonly name: string;
  /** File content; omitted for a directory entry. */
  readonly data?: string | Buffer;
  /** Deflate (default) or store. */
  readonly compress?: boolean;
  /** Unix mode, e.g. 0o120777 for a symbolic link. */
  readonly mode?: number;
  /** Streams this many zero bytes instead of `data` (a bomb without holding it in memory). */
  readonly zeros?: number;
}

export async function buildZip(items: readonly ArchiveItem[]): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  const mtime = new Date('2024-05-01T00:00:00Z');
  for (const item of items) {
    const options = { mtime, ...(item.mode !== undefined ? { mode: item.mode } : {}) };
    if (item.zeros !== undefined) {
      zip.addReadStream(Readable.from(zeroChunks(item.zeros)), item.name, { ...options, compress: true });
    } else if (item.data === undefined) {
      zip.addEmptyDirectory(item.name, options);
    } else {
      const data = typeof item.data === 'string' ? Buffer.from(item.data) : item.data;
      zip.addBuffer(data, item.name, { ...options, compress: item.compress ?? true });
    }
  }
  zip.end();
  const chunks: Buffer[] = [];
  for await (const chunk of zip.outputStream as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

function* zeroChunks(total: number): Generator<Buffer> {
  const chunk = Buffer.alloc(1024 * 1024);
  for (let left = total; left > 0; left -= chunk.length) yield left >= chunk.length ? chunk : chunk.subarray(0, left);
}

interface EntryHeaders {
  readonly name: string;
  /** Offset of the central directory record. */
  readonly central: number;
  /** Offset of the local file header. */
  readonly local: number;
}

/** The central directory records and their local headers, in archive order. */
export function entryHeaders(zip: Buffer): EntryHeaders[] {
  const eocd = zip.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  if (eocd < 0) throw new Error('no end of central directory record');
  const count = zip.readUInt16LE(eocd + 10);
  let offset = zip.readUInt32LE(eocd + 16);
  const headers: EntryHeaders[] = [];
  for (let i = 0; i < count; i += 1) {
    const nameLength = zip.readUInt16LE(offset + 28);
    const extraLength = zip.readUInt16LE(offset + 30);
    const commentLength = zip.readUInt16LE(offset + 32);
    const name = zip.toString('utf8', offset + 46, offset + 46 + nameLength);
    headers.push({ name, central: offset, local: zip.readUInt32LE(offset + 42) });
    offset += 46 + nameLength + extraLength + commentLength;
  }
  return headers;
}

function headersOf(zip: Buffer, name: string): EntryHeaders {
  const found = entryHeaders(zip).find((h) => h.name === name);
  if (!found) throw new Error(`no entry ${name}`);
  return found;
}

/** Renames an entry in both headers; the new name must have the same byte length (offsets stay valid). */
export function renameEntry(zip: Buffer, from: string, to: string): Buffer {
  const patched = Buffer.from(zip);
  const target = Buffer.from(to);
  if (target.length !== Buffer.byteLength(from)) throw new Error('renameEntry needs names of equal length');
  const { central, local } = headersOf(patched, from);
  target.copy(patched, central + 46);
  target.copy(patched, local + 30);
  return patched;
}

/** Sets general purpose bit 0 (traditional encryption) of an entry: local header offset 6, central offset 8. */
export function markEncrypted(zip: Buffer, name: string): Buffer {
  const patched = Buffer.from(zip);
  const { central, local } = headersOf(patched, name);
  patched.writeUInt16LE(patched.readUInt16LE(local + 6) | 1, local + 6);
  patched.writeUInt16LE(patched.readUInt16LE(central + 8) | 1, central + 8);
  return patched;
}

/** Writes the compression method of an entry (central offset 10, local offset 8). */
export function setCompressionMethod(zip: Buffer, name: string, method: number): Buffer {
  const patched = Buffer.from(zip);
  const { central, local } = headersOf(patched, name);
  patched.writeUInt16LE(method, central + 10);
  patched.writeUInt16LE(method, local + 8);
  return patched;
}

/** Declares a different uncompressed size in the central directory (offset 24): a header that lies. */
export function declareUncompressedSize(zip: Buffer, name: string, size: number): Buffer {
  const patched = Buffer.from(zip);
  patched.writeUInt32LE(size, headersOf(patched, name).central + 24);
  return patched;
}

/** Overwrites the first bytes of an entry's compressed data with garbage. */
export function corruptData(zip: Buffer, name: string): Buffer {
  const patched = Buffer.from(zip);
  const { local } = headersOf(patched, name);
  const dataStart = local + 30 + patched.readUInt16LE(local + 26) + patched.readUInt16LE(local + 28);
  patched.fill(0xff, dataStart, dataStart + 8);
  return patched;
}
