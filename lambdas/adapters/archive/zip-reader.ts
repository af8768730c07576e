/**
 * Reads an uploaded ZIP archive entry by entry with yauzl, under our own caps (yauzl's checks are a second line):
 * the planning rules are in `core/processing/zip-import.ts`, the limits and codes in docs/zip-import.md.
 *
 * Two passes over the archive: the central directory first (names and flags only, nothing inflated), so that the
 * file count is known before any content is read; then each file's content, in archive order, one at a time.
 *
 * Over 400 lines on purpose: the two passes share the open archive, its counters and its limits, and each limit is
 * checked where the bytes are read; split, the limits would be checked far from the reads they bound.
 */
import type { Readable } from 'node:stream';
import * as yauzl from 'yauzl';
import { fileNameSafetyViolations } from '#core/knowledge/fields';
import {
  baseNameOf,
  type ZipArchiveErrorCode,
  type ZipEntry,
  type ZipEntryRejectionCode,
  type ZipProblem,
} from '#core/processing/zip-entries';

export interface ZipLimits {
  /** Most files in one archive (directories and macOS/Windows junk excluded; refused entries and the CSV count). */
  readonly maxEntries: number;
  /** Most bytes inflated over the whole archive, counted while streaming; past it the read stops. */
  readonly maxTotalBytes: number;
  /** Largest single file, as for a single upload. */
  readonly maxEntryBytes: number;
  /** Most inflated bytes per compressed byte of one entry, checked once it has inflated `ratioFloorBytes`. */
  readonly maxCompressionRatio: number;
  /** Below this many inflated bytes an entry's ratio is not judged (tiny files compress absurdly well). */
  readonly ratioFloorBytes: number;
  /**
   * Most inflated bytes per byte of the whole archive, checked once the archive has inflated `ratioFloorBytes`: many
   * entries each just under the per-entry floor cannot add up to a bomb.
   */
  readonly maxArchiveRatio: number;
}

const MB = 1024 * 1024;

export const DEFAULT_ZIP_LIMITS: ZipLimits = {
  /** Room for a batch of 1,000 documents with its CSV, twice over; the worker's `ZIP_MAX_ENTRIES` overrides it. */
  maxEntries: 2000,
  maxTotalBytes: 500 * MB,
  maxEntryBytes: 50 * MB,
  maxCompressionRatio: 100,
  ratioFloorBytes: 1 * MB,
  maxArchiveRatio: 100,
};

export interface ZipReadResult {
  /** File entries handed to `onEntry`, accepted and rejected. */
  readonly entries: number;
  /** Bytes inflated in all, refused entries' partial reads included. */
  readonly bytesInflated: number;
  /** Why the archive could not be read to its end, or null. Entries handed over before it keep their outcome. */
  readonly error: ZipProblem<ZipArchiveErrorCode> | null;
}

/**
 * Reads `source` (the archive's bytes, or a path to it) and hands every file entry to `onEntry`, in archive order,
 * waiting for each call before reading the next. Problems of one entry are entries with `rejected`; problems of
 * the archive end the read with `error`. Throws only what `onEntry` throws.
 */
export async function readZipArchive(
  source: Buffer | string,
  limits: Partial<ZipLimits>,
  onEntry: (entry: ZipEntry) => Promise<void>,
): Promise<ZipReadResult> {
  const caps: ZipLimits = { ...DEFAULT_ZIP_LIMITS, ...limits };
  let zip: yauzl.ZipFile;
  try {
    zip = await openArchive(source);
  } catch (error) {
    return { entries: 0, bytesInflated: 0, error: invalidArchive(error) };
  }
  // Errors of the central directory reach the entry iterator; this keeps a late one (after the iterator has let
  // go, e.g. while closing) from becoming an uncaught 'error' event.
  zip.on('error', () => {});
  try {
    const listing = await listFiles(zip, caps);
    if ('error' in listing) return { entries: 0, bytesInflated: 0, error: listing.error };
    return await readFiles(zip, listing.files, caps, onEntry);
  } finally {
    zip.close();
  }
}

/** An archive open for reading its files one by one, by path (after `readZipArchive` accepted them). */
export interface ZipFileReader {
  /** The content of the file at `fileName`, inflated under the per-file caps. */
  read(fileName: string): Promise<Buffer>;
  close(): void;
}

/**
 * Opens `path` and lists its central directory once, so each file can then be inflated on its own (several at once:
 * each read has its own stream): an import holds the files it is storing, never the archive's content.
 */
export async function openZipFileReader(path: string, limits: Partial<ZipLimits>): Promise<ZipFileReader> {
  const caps: ZipLimits = { ...DEFAULT_ZIP_LIMITS, ...limits };
  const zip = await openArchive(path);
  zip.on('error', () => {});
  const entries = new Map<string, yauzl.Entry>();
  try {
    for await (const entry of zip.eachEntry()) {
      const fileName = entryFileName(entry);
      if (!entries.has(fileName)) entries.set(fileName, entry); // as the first pass: a duplicate path was refused
    }
  } catch (error) {
    zip.close();
    throw error;
  }
  return {
    async read(fileName) {
      const entry = entries.get(fileName);
      if (!entry) throw new Error(`The archive has no file ${fileName}`);
      const read = await readEntry(
        zip,
        entry,
        { ...caps, maxTotalBytes: caps.maxEntryBytes },
        {
          inflatedBefore: 0,
          size: Number.MAX_SAFE_INTEGER, // the archive's ratio was judged by the first pass
        },
      );
      if ('bytes' in read) return read.bytes;
      throw new Error(
        `The file ${fileName} cannot be read again: ${'rejected' in read ? read.rejected.message : read.bomb}`,
      );
    },
    close: () => zip.close(),
  };
}

// yauzl options: names are decoded and checked by us (`decodeStrings: false`) because yauzl's own check fails the
// whole archive on one `../` entry, where we refuse only that entry. `autoClose: false`: the second pass reopens
// entries after the central directory has been read to its end.
const YAUZL_OPTIONS: yauzl.Options = {
  lazyEntries: true,
  decodeStrings: false,
  validateEntrySizes: true,
  autoClose: false,
};

function openArchive(source: Buffer | string): Promise<yauzl.ZipFile> {
  return typeof source === 'string'
    ? yauzl.openPromise(source, YAUZL_OPTIONS)
    : yauzl.fromBufferPromise(source, YAUZL_OPTIONS);
}

function invalidArchive(error: unknown): ZipProblem<'INVALID_ARCHIVE'> {
  const reason = error instanceof Error ? error.message : String(error);
  return { code: 'INVALID_ARCHIVE', message: `not a readable ZIP archive: ${reason}` };
}

function tooLarge(message: string): ZipProblem<'ARCHIVE_TOO_LARGE'> {
  return { code: 'ARCHIVE_TOO_LARGE', message };
}

interface ListedFile {
  readonly entry: yauzl.Entry;
  readonly fileName: string;
  /** Set when the entry is refused from its central directory record alone. */
  readonly rejected?: ZipProblem<ZipEntryRejectionCode>;
}

/** The entry's path as the archive names it, decoded (UTF-8 or CP437 by its flag). */
function entryFileName(entry: yauzl.Entry): string {
  // strict: keep backslashes, so that they are refused rather than read as separators
  return yauzl.getFileNameLowLevel(entry.generalPurposeBitFlag, entry.fileNameRaw, entry.extraFields, true);
}

/** Pass 1: every file record of the central directory, with the refusals that need no content. */
async function listFiles(
  zip: yauzl.ZipFile,
  caps: ZipLimits,
): Promise<{ files: ListedFile[] } | { error: ZipProblem<ZipArchiveErrorCode> }> {
  const files: ListedFile[] = [];
  const seen = new Set<string>();
  try {
    for await (const entry of zip.eachEntry()) {
      const fileName = entryFileName(entry);
      if (fileName.endsWith('/') && !unsafePathReason(fileName)) continue; // a directory: nothing to import
      const unsafe = unsafePathReason(fileName) ?? (isSymbolicLink(entry) ? 'it is a symbolic link' : null);
      if (!unsafe && isJunk(fileName)) continue;
      if (files.length === caps.maxEntries) {
        return {
          error: tooLarge(
            `the archive holds more than ${caps.maxEntries} files (${zip.entryCount} entries in all); split it into smaller archives`,
          ),
        };
      }
      const duplicate = seen.has(fileName);
      seen.add(fileName);
      files.push({ entry, fileName, ...rejectionFromRecord(entry, fileName, unsafe, duplicate, caps) });
    }
  } catch (error) {
    return { error: invalidArchive(error) };
  }
  return { files };
}

function rejectionFromRecord(
  entry: yauzl.Entry,
  fileName: string,
  unsafe: string | null,
  duplicate: boolean,
  caps: ZipLimits,
): { rejected?: ZipProblem<ZipEntryRejectionCode> } {
  const reject = (code: ZipEntryRejectionCode, message: string) => ({ rejected: { code, message } });
  if (unsafe) return reject('UNSAFE_PATH', `refused: ${unsafe}`);
  const badName = invalidNameReason(fileName);
  if (badName) return reject('INVALID_FILE_NAME', `refused: ${badName}`);
  if (duplicate) return reject('DUPLICATE_ENTRY', 'refused: an earlier entry of the archive has the same path');
  if (entry.isEncrypted()) return reject('ENCRYPTED_ENTRY', 'refused: the entry is encrypted (password-protected)');
  if (NESTED_ARCHIVE_NAME.test(fileName)) {
    return reject('NESTED_ARCHIVE', 'refused: archives inside the archive are not imported; add their files directly');
  }
  // The header can only make us refuse earlier, never accept: the stream is counted and capped again below.
  if (entry.uncompressedSize > caps.maxEntryBytes) {
    return reject(
      'FILE_TOO_LARGE',
      `refused: the file is ${entry.uncompressedSize} bytes; the limit is ${caps.maxEntryBytes} bytes`,
    );
  }
  if (entry.compressionMethod !== 0 && entry.compressionMethod !== 8) {
    return reject(
      'UNSUPPORTED_COMPRESSION',
      `refused: compression method ${entry.compressionMethod} is not supported (only stored and deflated entries)`,
    );
  }
  return {};
}

/** Why a path inside the archive could escape the folder it is extracted to (or is not a plain path), or null. */
export function unsafePathReason(fileName: string): string | null {
  if (fileName === '') return 'the entry has an empty name';
  if (fileName.includes('\\')) return 'the path contains a backslash';
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what is refused here
  if (/[\u0000-\u001f\u007f]/.test(fileName)) return 'the path contains control characters';
  if (fileName.startsWith('/')) return 'the path is absolute';
  if (/^[A-Za-z]:/.test(fileName)) return 'the path starts with a drive letter';
  if (fileName.split('/').includes('..')) return 'the path escapes the archive with ".."';
  return null;
}

/** Most UTF-8 bytes of an entry's whole path (folders included); its file name has the upload limit. */
export const MAX_ENTRY_PATH_BYTES = 1024;

/**
 * Why an entry's name breaks the rules every uploaded file name follows (its last segment becomes the document's
 * file name and object key), or null.
 */
function invalidNameReason(fileName: string): string | null {
  const bytes = Buffer.byteLength(fileName, 'utf8');
  if (bytes > MAX_ENTRY_PATH_BYTES) return `the path is ${bytes} bytes; the limit is ${MAX_ENTRY_PATH_BYTES}`;
  const [violation] = fileNameSafetyViolations(baseNameOf(fileName));
  return violation ? `the file name ${violation.message} (${violation.rule})` : null;
}

/** Unix mode in the high 16 bits of the external attributes, when the archive was made on a Unix-like system. */
function isSymbolicLink(entry: yauzl.Entry): boolean {
  const madeOnUnix = entry.versionMadeBy >> 8 === 3;
  return madeOnUnix && ((entry.externalFileAttributes >>> 16) & 0o170000) === 0o120000;
}

const JUNK_BASE_NAMES = new Set(['.DS_Store', 'Thumbs.db', 'desktop.ini']);

/** Files that archivers and desktops add and nobody means to import: skipped without a trace. */
function isJunk(fileName: string): boolean {
  if (fileName.split('/').includes('__MACOSX')) return true;
  const baseName = baseNameOf(fileName);
  return JUNK_BASE_NAMES.has(baseName) || baseName.startsWith('._');
}

const NESTED_ARCHIVE_NAME = /\.(zip|zipx|jar|war|ear|apk|7z|rar|tar|gz|tgz|bz2|tbz2?|xz|txz|zst|lz|lzma|cab|iso)$/i;

/** Formats that are ZIP containers by design: documents, not nested archives. */
const ZIP_BASED_DOCUMENT = /\.(docx|docm|dotx|xlsx|xlsm|xltx|pptx|pptm|potx|odt|ods|odp|epub)$/i;

/** The archive format the content starts with, or null. */
function archiveMagic(bytes: Buffer): string | null {
  const startsWith = (...signature: number[]) => signature.every((byte, i) => bytes[i] === byte);
  if (startsWith(0x50, 0x4b, 0x03, 0x04) || startsWith(0x50, 0x4b, 0x05, 0x06) || startsWith(0x50, 0x4b, 0x07, 0x08))
    return 'ZIP';
  if (startsWith(0x1f, 0x8b)) return 'gzip';
  if (startsWith(0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c)) return '7z';
  if (startsWith(0x52, 0x61, 0x72, 0x21, 0x1a, 0x07)) return 'RAR';
  if (startsWith(0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00)) return 'xz';
  if (startsWith(0x42, 0x5a, 0x68) && bytes.subarray(4, 10).equals(Buffer.from([0x31, 0x41, 0x59, 0x26, 0x53, 0x59])))
    return 'bzip2';
  if (bytes.length >= 262 && bytes.subarray(257, 262).toString('latin1') === 'ustar') return 'tar';
  return null;
}

/** Pass 2: the content of each listed file, one at a time, counted and capped while it streams. */
async function readFiles(
  zip: yauzl.ZipFile,
  files: readonly ListedFile[],
  caps: ZipLimits,
  onEntry: (entry: ZipEntry) => Promise<void>,
): Promise<ZipReadResult> {
  let entries = 0;
  let bytesInflated = 0;
  for (const file of files) {
    const { fileName } = file;
    if (file.rejected) {
      await onEntry({ fileName, rejected: file.rejected });
      entries += 1;
      continue;
    }
    const read = await readEntry(zip, file.entry, caps, { inflatedBefore: bytesInflated, size: zip.fileSize });
    bytesInflated += read.bytesInflated;
    if ('bomb' in read) {
      return { entries, bytesInflated, error: tooLarge(`${fileName}: ${read.bomb}`) };
    }
    if ('rejected' in read) {
      await onEntry({ fileName, rejected: read.rejected });
    } else {
      const magic = ZIP_BASED_DOCUMENT.test(fileName) ? null : archiveMagic(read.bytes);
      await onEntry(
        magic
          ? {
              fileName,
              rejected: {
                code: 'NESTED_ARCHIVE',
                message: `refused: the content is a ${magic} archive; archives inside the archive are not imported`,
              },
            }
          : { fileName, baseName: baseNameOf(fileName), size: read.bytes.length, bytes: read.bytes },
      );
    }
    entries += 1;
  }
  return { entries, bytesInflated, error: null };
}

type EntryRead = { readonly bytesInflated: number } & (
  | { readonly bytes: Buffer }
  | { readonly rejected: ZipProblem<ZipEntryRejectionCode> }
  | { readonly bomb: string }
);

/** Inflates one entry, stopping as soon as it passes a cap of the entry or of the archive read so far. */
async function readEntry(
  zip: yauzl.ZipFile,
  entry: yauzl.Entry,
  caps: ZipLimits,
  archive: { readonly inflatedBefore: number; readonly size: number },
): Promise<EntryRead> {
  const budget = caps.maxTotalBytes - archive.inflatedBefore;
  let stream: Readable;
  try {
    stream = await zip.openReadStreamPromise(entry);
  } catch (error) {
    return { bytesInflated: 0, rejected: corrupt(error) };
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > budget) {
        return {
          bytesInflated: size,
          bomb: `the archive inflates to more than the limit of ${caps.maxTotalBytes} bytes in all`,
        };
      }
      if (size > caps.ratioFloorBytes && size / Math.max(entry.compressedSize, 1) > caps.maxCompressionRatio) {
        return {
          bytesInflated: size,
          bomb: `the entry inflates more than ${caps.maxCompressionRatio} times its compressed size (${entry.compressedSize} bytes): a ZIP bomb`,
        };
      }
      const total = archive.inflatedBefore + size;
      if (total > caps.ratioFloorBytes && total / Math.max(archive.size, 1) > caps.maxArchiveRatio) {
        return {
          bytesInflated: size,
          bomb: `the archive inflates more than ${caps.maxArchiveRatio} times its size (${archive.size} bytes): a ZIP bomb`,
        };
      }
      if (size > caps.maxEntryBytes) {
        return {
          bytesInflated: size,
          rejected: {
            code: 'FILE_TOO_LARGE',
            message: `refused: the file is larger than the limit of ${caps.maxEntryBytes} bytes`,
          },
        };
      }
      chunks.push(chunk);
    }
  } catch (error) {
    return { bytesInflated: size, rejected: corrupt(error) };
  } finally {
    stream.destroy();
  }
  return { bytesInflated: size, bytes: Buffer.concat(chunks, size) };
}

function corrupt(error: unknown): ZipProblem<'CORRUPT_ENTRY'> {
  const reason = error instanceof Error ? error.message : String(error);
  return { code: 'CORRUPT_ENTRY', message: `refused: the entry's data cannot be read: ${reason}` };
}
