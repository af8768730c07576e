/**
 * The entries of a ZIP archive as the import sees them: accepted (a file to import) or rejected by the archive reader
 * with a code, and the error codes of an archive and of its files (docs/zip-import.md).
 */

import type { CustomMetaField } from '#core/knowledge/fields';

/** Why the archive reader refused one entry; the rest of the archive is still read. */
export const ZIP_ENTRY_REJECTION_CODES = [
  'UNSAFE_PATH',
  'INVALID_FILE_NAME',
  'ENCRYPTED_ENTRY',
  'NESTED_ARCHIVE',
  'FILE_TOO_LARGE',
  'UNSUPPORTED_COMPRESSION',
  'CORRUPT_ENTRY',
  'DUPLICATE_ENTRY',
] as const;

export type ZipEntryRejectionCode = (typeof ZIP_ENTRY_REJECTION_CODES)[number];

/** Why a whole archive could not be (fully) read: the job fails; entries yielded before keep their outcome. */
export type ZipArchiveErrorCode = 'ARCHIVE_TOO_LARGE' | 'INVALID_ARCHIVE';

/** Why one file of the archive is not imported: refused by the reader, or by its row of the label file. */
export const ZIP_FILE_ERROR_CODES = [
  ...ZIP_ENTRY_REJECTION_CODES,
  'INVALID_LABEL',
  'INVALID_CUSTOM_META',
  'INVALID_LABEL_ROW',
  'INVALID_LABEL_FILE',
] as const;

export type ZipFileErrorCode = (typeof ZIP_FILE_ERROR_CODES)[number];

export interface ZipProblem<C extends string> {
  readonly code: C;
  readonly message: string;
}

/** A file the reader read in full and accepted. */
export interface AcceptedZipEntry {
  /** Path inside the archive, `/`-separated, never starting with `/` and never containing `..`. */
  readonly fileName: string;
  /** The last segment of `fileName`. */
  readonly baseName: string;
  /** Bytes actually inflated (equal to `bytes.length`). */
  readonly size: number;
  readonly bytes: Buffer;
}

/** A file entry the reader refused; its bytes were not (fully) read. */
export interface RejectedZipEntry {
  readonly fileName: string;
  readonly rejected: ZipProblem<ZipEntryRejectionCode>;
}

export type ZipEntry = AcceptedZipEntry | RejectedZipEntry;

/** What planning needs of an entry: its name and whether it was refused. Bytes are not needed (nor kept). */
export type ZipEntryInfo = Pick<ZipEntry, 'fileName'> & { readonly rejected?: ZipProblem<ZipEntryRejectionCode> };

export interface ZipLabels {
  readonly label1: string | null;
  readonly label2: string | null;
}

export type ZipCustomMeta = Readonly<Record<CustomMetaField, string | null>>;

/** What the upload request gives every file its label file does not speak for: labels, and custom metadata if any. */
export type ZipRequestMetadata = ZipLabels & Partial<ZipCustomMeta>;

export function isRejectedEntry(entry: ZipEntryInfo): entry is RejectedZipEntry {
  return entry.rejected !== undefined;
}

export function baseNameOf(fileName: string): string {
  return fileName.slice(fileName.lastIndexOf('/') + 1);
}

/** The base name without its last extension: `INV-001.pdf` → `INV-001`; a name without an extension is kept. */
export function stemOf(baseName: string): string {
  const dot = baseName.lastIndexOf('.');
  return dot > 0 ? baseName.slice(0, dot) : baseName;
}

// ---------------------------------------------------------------------------------------------------------------
// Which entry is the label file
// ---------------------------------------------------------------------------------------------------------------
