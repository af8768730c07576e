/**
 * The rules of a ZIP import (spec "ZIP import"), with no I/O: which entry is the label file, how its rows are read,
 * and the labels and custom metadata (or the error) each file of the archive ends with. The archive is read by
 * `adapters/archive/zip-reader.ts`, which yields the entries planned here (zip-entries.ts); the label file is chosen by label-file.ts
 * and read by label-csv.ts. Rules and choices: docs/zip-import.md.
 */

import {
  CUSTOM_META_FIELDS,
  type CustomMetaField,
  customDocumentId as customDocumentIdSchema,
} from '#core/knowledge/fields';
import type { LabelCsv, LabelCsvRow } from './label-csv';
import { findLabelFile, labelFolderOf } from './label-file';
import {
  baseNameOf,
  stemOf,
  type ZipCustomMeta,
  type ZipEntryInfo,
  type ZipFileErrorCode,
  type ZipLabels,
  type ZipProblem,
  type ZipRequestMetadata,
} from './zip-entries';

export interface ZipFilePlan {
  /** Path inside the archive (unique among accepted entries). */
  readonly fileName: string;
  /** The document's file name. */
  readonly baseName: string;
  /**
   * The labels the document gets: its row's, or the request's when no row names it; both null when its row or the
   * label file is unusable.
   */
  readonly labels: ZipLabels;
  /**
   * The custom metadata the document gets, field by field: its row's when the label file has that column, else the
   * request's; all null when its row or the label file is unusable.
   */
  readonly customMeta: ZipCustomMeta;
  /** Set when a row named the file by a custom document id: the document is created with that id. */
  readonly customDocumentId?: string;
  /** Line of the label file whose row labels this file; null when the request's labels apply. */
  readonly labelRow: number | null;
  /** When set, the file is not imported: it is listed in the job with this error. */
  readonly error?: ZipProblem<ZipFileErrorCode>;
}

export interface ZipImportPlan {
  /** Every file entry except the label file, in archive order. */
  readonly files: readonly ZipFilePlan[];
  /** Path of the label file used, or null. */
  readonly labelFile: string | null;
  /** Set when the label file exists but cannot be used: every file then carries INVALID_LABEL_FILE. */
  readonly labelFileError: ZipProblem<'INVALID_LABEL_FILE'> | null;
  /** Things the caller should see that fail no file: unmatched rows, duplicate rows, ignored columns. */
  readonly warnings: readonly string[];
}

const NO_LABELS: ZipLabels = { label1: null, label2: null };

const NO_CUSTOM_META: ZipCustomMeta = { customMeta1: null, customMeta2: null, customMeta3: null, customMeta4: null };

/** At most this many warnings are kept; the last one says how many more there were. */
export const MAX_WARNINGS = 50;

interface FileIndex {
  readonly byPath: Map<string, ZipEntryInfo[]>;
  /** By path inside the label folder (`a.pdf` for `reports/a.pdf`); empty when the label folder is the root. */
  readonly byPathInFolder: Map<string, ZipEntryInfo[]>;
  readonly byBaseName: Map<string, ZipEntryInfo[]>;
  readonly byStem: Map<string, ZipEntryInfo[]>;
}

type Resolution =
  | { readonly kind: 'name'; readonly files: readonly ZipEntryInfo[] }
  | { readonly kind: 'customDocumentId'; readonly files: readonly ZipEntryInfo[] }
  | { readonly kind: 'none' };

/**
 * The outcome of every file of the archive. `labelCsv` is the parsed label file (`parseLabelCsv`) of the entry
 * `findLabelFile(entries)` names, or null when there is none or it could not be read.
 *
 * Primary course: the first row is dropped when it is a header; each remaining row names files by path (with or
 * without the label file's folder), by base name, or by custom document id; the first row naming a file gives it
 * its labels and custom metadata; every file no row names gets the request's.
 */
export function planZipImport(
  entries: readonly ZipEntryInfo[],
  labelCsv: LabelCsv | null,
  request: ZipRequestMetadata,
): ZipImportPlan {
  const requestLabels: ZipLabels = { label1: request.label1, label2: request.label2 };
  const requestCustomMeta = Object.fromEntries(
    CUSTOM_META_FIELDS.map((field) => [field, request[field] ?? null]),
  ) as Record<CustomMetaField, string | null>;
  const choice = findLabelFile(entries);
  const warnings = new WarningList(choice.warnings);
  const labelFile = choice.fileName;
  const labelEntry = entries.find((e) => e.fileName === labelFile);
  const documents = entries.filter((e) => e !== labelEntry);

  const labelFileError = labelEntry === undefined ? null : unusableLabelFile(labelEntry, labelCsv);
  if (labelFileError) {
    return {
      files: documents.map((entry) => ({
        ...fileBase(entry),
        labels: NO_LABELS,
        customMeta: NO_CUSTOM_META,
        labelRow: null,
        error: entry.rejected ?? labelFileError,
      })),
      labelFile,
      labelFileError,
      warnings: warnings.list(),
    };
  }

  const assignments = new Map<ZipEntryInfo, { row: LabelCsvRow; customDocumentId?: string; ambiguous?: string }>();
  if (labelFile !== null && labelCsv !== null) {
    for (const warning of labelCsv.warnings) warnings.add(warning);
    assignRows(labelCsv.rows, indexFiles(documents, labelFolderOf(entries)), labelFile, assignments, warnings);
  }

  const files = documents.map((entry): ZipFilePlan => {
    const assignment = assignments.get(entry);
    if (!assignment) {
      return {
        ...fileBase(entry),
        labels: requestLabels,
        customMeta: requestCustomMeta,
        labelRow: null,
        ...rejection(entry),
      };
    }
    const { row } = assignment;
    const labels = 'labels' in row.result ? row.result.labels : NO_LABELS;
    const customMeta = 'customMeta' in row.result ? { ...requestCustomMeta, ...row.result.customMeta } : NO_CUSTOM_META;
    const error: ZipProblem<ZipFileErrorCode> | undefined =
      entry.rejected ??
      ('error' in row.result ? row.result.error : undefined) ??
      (assignment.ambiguous ? { code: 'INVALID_LABEL_ROW', message: assignment.ambiguous } : undefined);
    return {
      ...fileBase(entry),
      labels,
      customMeta,
      labelRow: row.line,
      ...(assignment.customDocumentId !== undefined ? { customDocumentId: assignment.customDocumentId } : {}),
      ...(error ? { error } : {}),
    };
  });
  if (!files.some((f) => f.error === undefined)) warnings.add('the archive holds no file that can be imported');
  return { files, labelFile, labelFileError: null, warnings: warnings.list() };
}

function fileBase(entry: ZipEntryInfo): Pick<ZipFilePlan, 'fileName' | 'baseName'> {
  return { fileName: entry.fileName, baseName: baseNameOf(entry.fileName) };
}

function rejection(entry: ZipEntryInfo): Pick<ZipFilePlan, 'error'> {
  return entry.rejected ? { error: entry.rejected } : {};
}

function unusableLabelFile(
  labelEntry: ZipEntryInfo,
  labelCsv: LabelCsv | null,
): ZipProblem<'INVALID_LABEL_FILE'> | null {
  const reason = labelEntry.rejected
    ? `the archive reader refused it (${labelEntry.rejected.code}: ${labelEntry.rejected.message})`
    : labelCsv === null
      ? 'it could not be read'
      : labelCsv.error;
  if (reason === null) return null;
  return {
    code: 'INVALID_LABEL_FILE',
    message: `not imported: the label file ${labelEntry.fileName} cannot be used, so the labels of the archive's files are unknown: ${reason}`,
  };
}

function indexFiles(files: readonly ZipEntryInfo[], labelFolder: string): FileIndex {
  const index: FileIndex = { byPath: new Map(), byPathInFolder: new Map(), byBaseName: new Map(), byStem: new Map() };
  const add = (map: Map<string, ZipEntryInfo[]>, key: string, file: ZipEntryInfo) => {
    const list = map.get(key);
    if (list) list.push(file);
    else map.set(key, [file]);
  };
  for (const file of files) {
    if (file.rejected?.code === 'DUPLICATE_ENTRY') continue;
    const baseName = baseNameOf(file.fileName);
    add(index.byPath, file.fileName, file);
    if (labelFolder !== '') add(index.byPathInFolder, file.fileName.slice(labelFolder.length), file);
    add(index.byBaseName, baseName, file);
    add(index.byStem, stemOf(baseName), file);
  }
  return index;
}

/**
 * What a row's identifier names: the file at that exact path; else the file at that path inside the label folder;
 * else every file with that base name; else, when the identifier is a valid custom document id, the file whose base
 * name without extension is that id.
 */
function resolve(identifier: string, index: FileIndex): Resolution {
  const byName =
    index.byPath.get(identifier) ?? index.byPathInFolder.get(identifier) ?? index.byBaseName.get(identifier);
  if (byName) return { kind: 'name', files: byName };
  const byStem = index.byStem.get(identifier);
  if (byStem && customDocumentIdSchema.safeParse(identifier).success)
    return { kind: 'customDocumentId', files: byStem };
  return { kind: 'none' };
}

function assignRows(
  rows: readonly LabelCsvRow[],
  index: FileIndex,
  labelFile: string,
  assignments: Map<ZipEntryInfo, { row: LabelCsvRow; customDocumentId?: string; ambiguous?: string }>,
  warnings: WarningList,
): void {
  rows.forEach((row, i) => {
    const where = `label file line ${row.line}`;
    const resolution: Resolution = row.identifier === '' ? { kind: 'none' } : resolve(row.identifier, index);
    // The header: a first row that reads as column names and whose first cell is no file name (a header word such
    // as "id" may equal a file's name without extension). It is ignored silently.
    if (i === 0 && row.looksLikeHeader && resolution.kind !== 'name') return;
    if (resolution.kind === 'none') {
      warnings.add(`${where}: ${unmatchedReason(row.identifier, labelFile)}; the row is ignored`);
      return;
    }
    const ambiguous =
      resolution.kind === 'customDocumentId' && resolution.files.length > 1
        ? `${where}: custom document id ${JSON.stringify(row.identifier)} matches ${resolution.files.length} files (${resolution.files.map((f) => f.fileName).join(', ')}); name the file by its full file name instead`
        : undefined;
    for (const file of resolution.files) {
      const earlier = assignments.get(file);
      if (earlier) {
        warnings.add(
          `${where}: ${file.fileName} is already named by line ${earlier.row.line}; the first row wins and this one is ignored for it`,
        );
        continue;
      }
      assignments.set(file, {
        row,
        ...(resolution.kind === 'customDocumentId' && !ambiguous ? { customDocumentId: row.identifier } : {}),
        ...(ambiguous ? { ambiguous } : {}),
      });
    }
  });
}

function unmatchedReason(identifier: string, labelFile: string): string {
  if (identifier === '') return 'the first column (the file identifier) is empty';
  if (identifier === labelFile || identifier === baseNameOf(labelFile)) {
    return 'it names the label file itself, which is not a document';
  }
  return `${JSON.stringify(identifier)} names no file of the archive: give the file name with its extension, its path in the archive, or its name without extension as a custom document id`;
}

class WarningList {
  private readonly items: string[] = [];
  private dropped = 0;

  constructor(initial: readonly string[]) {
    for (const warning of initial) this.add(warning);
  }

  add(warning: string): void {
    if (this.items.length < MAX_WARNINGS) this.items.push(warning);
    else this.dropped += 1;
  }

  list(): string[] {
    if (this.dropped === 0) return [...this.items];
    return [...this.items.slice(0, MAX_WARNINGS - 1), `… and ${this.dropped + 1} more warnings`];
  }
}
