/**
 * The rules of a ZIP import (spec "ZIP import"), with no I/O: which entry is the label file, how its rows are read,
 * and the labels and custom metadata (or the error) each file of the archive ends with. The archive is read by
 * `adapters/archive/zip-reader.ts`, which yields the entries planned here. Rules and choices: docs/zip-import.md.
 */
import { parse } from 'csv-parse/sync';
import {
  CUSTOM_META_FIELDS,
  type CustomMetaField,
  customDocumentId as customDocumentIdSchema,
  customMetaViolations,
} from '../knowledge/fields';
import { labelViolations } from '../knowledge/labels';

/** Why the archive reader refused one entry; the rest of the archive is still read. */
export type ZipEntryRejectionCode =
  | 'UNSAFE_PATH'
  | 'INVALID_FILE_NAME'
  | 'ENCRYPTED_ENTRY'
  | 'NESTED_ARCHIVE'
  | 'FILE_TOO_LARGE'
  | 'UNSUPPORTED_COMPRESSION'
  | 'CORRUPT_ENTRY'
  | 'DUPLICATE_ENTRY';

/** Why a whole archive could not be (fully) read: the job fails; entries yielded before keep their outcome. */
export type ZipArchiveErrorCode = 'ARCHIVE_TOO_LARGE' | 'INVALID_ARCHIVE';

/** Why one file of the archive is not imported: refused by the reader, or by its row of the label file. */
export type ZipFileErrorCode =
  | ZipEntryRejectionCode
  | 'INVALID_LABEL'
  | 'INVALID_CUSTOM_META'
  | 'INVALID_LABEL_ROW'
  | 'INVALID_LABEL_FILE';

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
function stemOf(baseName: string): string {
  const dot = baseName.lastIndexOf('.');
  return dot > 0 ? baseName.slice(0, dot) : baseName;
}

// ---------------------------------------------------------------------------------------------------------------
// Which entry is the label file
// ---------------------------------------------------------------------------------------------------------------

export interface LabelFileChoice {
  /** The label file's path in the archive, or null when the archive has none. */
  readonly fileName: string | null;
  readonly warnings: readonly string[];
}

/** The top-level folder of a path, with its slash (`reports/`), or '' for a file at the root. */
function topFolderOf(fileName: string): string {
  const slash = fileName.indexOf('/');
  return slash > 0 ? fileName.slice(0, slash + 1) : '';
}

/**
 * The folder the label file is looked for in: the single top-level folder that holds every entry (an archive made
 * by "compress folder": `reports/labels.csv`, `reports/a.pdf`), otherwise the root ('').
 */
export function labelFolderOf(entries: readonly ZipEntryInfo[]): string {
  let folder: string | undefined;
  for (const entry of entries) folder = narrowLabelFolder(folder, entry.fileName);
  return folder ?? '';
}

function narrowLabelFolder(folder: string | undefined, fileName: string): string {
  const top = topFolderOf(fileName);
  return folder === undefined || folder === top ? top : '';
}

function isDirectlyIn(fileName: string, folder: string): boolean {
  return fileName.startsWith(folder) && !fileName.slice(folder.length).includes('/');
}

/** A `.csv` (any case) directly in `folder`, not a refused second copy of an earlier path. */
function isLabelFileCandidate(entry: ZipEntryInfo, folder: string): boolean {
  return (
    isDirectlyIn(entry.fileName, folder) &&
    entry.fileName.toLowerCase().endsWith('.csv') &&
    entry.rejected?.code !== 'DUPLICATE_ENTRY'
  );
}

/**
 * The label file is the one `.csv` of the label folder (`labelFolderOf`): the root, or the single top-level folder
 * that holds every entry. Several `.csv` files there are ambiguous: none of them is the label file and all are
 * imported as documents (with a warning). Any other `.csv` is a document.
 */
export function findLabelFile(entries: readonly ZipEntryInfo[]): LabelFileChoice {
  const folder = labelFolderOf(entries);
  const csvs = entries.filter((e) => isLabelFileCandidate(e, folder));
  if (csvs.length === 1) return { fileName: csvs[0].fileName, warnings: [] };
  if (csvs.length === 0) return { fileName: null, warnings: [] };
  const names = csvs.map((e) => e.fileName).join(', ');
  const where = folder === '' ? 'at the archive root' : `in ${folder}, the folder that holds every file`;
  return {
    fileName: null,
    warnings: [
      `${csvs.length} CSV files ${where} (${names}): none is used as the label file and all are imported as documents; keep exactly one CSV there for per-file labels`,
    ],
  };
}

/**
 * Follows the entries as a reader hands them over, so that it keeps the content of one CSV at most: the candidate is
 * the first CSV of the label folder as far as the entries so far tell. Whatever follows, the label file that
 * `findLabelFile` names at the end is that candidate or none: the label folder only ever widens to the root, which
 * drops a candidate in a folder, and every root CSV comes at or after that moment.
 */
export class LabelFileCandidate {
  private folder: string | undefined;
  private current: string | null = null;

  /** Notes the next entry; true when it has become the candidate (keep its content, drop what was kept). */
  offer(entry: ZipEntryInfo): boolean {
    this.folder = narrowLabelFolder(this.folder, entry.fileName);
    const folder = this.folder;
    if (this.current !== null && !isDirectlyIn(this.current, folder)) this.current = null;
    if (this.current !== null || !isLabelFileCandidate(entry, folder)) return false;
    this.current = entry.fileName;
    return true;
  }

  /** The path of the candidate, or null when no entry so far can be the label file. */
  get fileName(): string | null {
    return this.current;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Reading the label file
// ---------------------------------------------------------------------------------------------------------------

export type LabelColumn = 'label1' | 'label2';

export interface LabelCsvRow {
  /** Line of the label file the row ends on (1-based), for messages. */
  readonly line: number;
  /** The first cell, trimmed: a file name (or path inside the archive) or a custom document id. */
  readonly identifier: string;
  /**
   * The labels and custom metadata of the row (an empty or missing cell is null), or why they are not valid. Only
   * the custom metadata columns the label file has (`LabelCsv.customMetaColumns`) are read.
   */
  readonly result:
    | { readonly labels: ZipLabels; readonly customMeta: Partial<ZipCustomMeta> }
    | { readonly error: ZipProblem<'INVALID_LABEL' | 'INVALID_CUSTOM_META'> };
  /** True when the row reads as column names: its label cells are no labels, or a custom cell is its column's name. */
  readonly looksLikeHeader: boolean;
}

export interface LabelCsv {
  /** Every non-empty row in file order, the header row included (it is told apart by `planZipImport`). */
  readonly rows: readonly LabelCsvRow[];
  /**
   * The custom metadata columns the file has (its widest row, the header included, reaches them). A column the file
   * does not have leaves that field to the request, for every file.
   */
  readonly customMetaColumns: readonly CustomMetaField[];
  /** Why the whole file is unusable (not UTF-8, broken quoting), or null. */
  readonly error: string | null;
  readonly warnings: readonly string[];
}

const LABEL_COLUMNS: readonly LabelColumn[] = ['label1', 'label2'];
/** identifier, label1, label2, customMeta1..4. */
const COLUMN_COUNT = 1 + LABEL_COLUMNS.length + CUSTOM_META_FIELDS.length;

/**
 * Parses the label file: columns identifier, label1, label2, customMeta1, customMeta2, customMeta3, customMeta4.
 * Cells are trimmed; an empty cell means "none"; columns after the seventh are ignored (with one warning); a UTF-8
 * BOM is skipped; the delimiter is a comma, or a semicolon when the first line has semicolons and no comma
 * (spreadsheets in some locales save that way).
 */
export function parseLabelCsv(csv: string | Uint8Array): LabelCsv {
  let text: string;
  try {
    text = typeof csv === 'string' ? csv : new TextDecoder('utf-8', { fatal: true }).decode(csv);
  } catch {
    return { rows: [], customMetaColumns: [], error: 'the label file is not UTF-8 text', warnings: [] };
  }
  text = text.replace(/^\uFEFF/, '');
  const firstLine = text.match(/^.*\S.*$/m)?.[0] ?? '';
  const delimiter = !firstLine.includes(',') && firstLine.includes(';') ? ';' : ',';

  let records: { record: string[]; info: { lines: number } }[];
  try {
    records = parse(text, {
      delimiter,
      info: true,
      relax_column_count: true,
      relax_quotes: true,
      skip_empty_lines: true,
      trim: true,
    }) as unknown as { record: string[]; info: { lines: number } }[];
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return { rows: [], customMetaColumns: [], error: `the label file is not valid CSV: ${reason}`, warnings: [] };
  }

  const kept = records
    .map(({ record, info }) => ({ cells: record.map((cell) => cell.trim()), line: info.lines }))
    .filter(({ cells }) => cells.some((cell) => cell !== ''));
  const width = Math.min(COLUMN_COUNT, Math.max(0, ...kept.map(({ cells }) => cells.length)));
  const customMetaColumns = CUSTOM_META_FIELDS.slice(0, Math.max(0, width - 1 - LABEL_COLUMNS.length));
  const warnings: string[] = [];
  const extra = kept.find(({ cells }) => cells.slice(COLUMN_COUNT).some((cell) => cell !== ''));
  if (extra) {
    warnings.push(
      `label file line ${extra.line}: columns after the seventh are ignored (the columns are identifier, label1, label2, customMeta1, customMeta2, customMeta3, customMeta4)`,
    );
  }
  const rows = kept.map(
    ({ cells, line }): LabelCsvRow => ({
      line,
      identifier: cells[0] ?? '',
      result: valuesOfRow(cells, line, customMetaColumns),
      looksLikeHeader: looksLikeHeader(cells),
    }),
  );
  return { rows, customMetaColumns, error: null, warnings };
}

function valuesOfRow(
  cells: readonly string[],
  line: number,
  customMetaColumns: readonly CustomMetaField[],
): LabelCsvRow['result'] {
  const labelProblems: string[] = [];
  const metaProblems: string[] = [];
  const labels: Record<LabelColumn, string | null> = { label1: null, label2: null };
  const customMeta: Partial<Record<CustomMetaField, string | null>> = {};
  const check = (
    problems: string[],
    column: number,
    field: string,
    value: string,
    violations: readonly { rule: string; message: string }[],
  ) => {
    const reasons = violations.map((v) => `${v.message} (${v.rule})`).join('; ');
    // A long value is not repeated whole in the message: its start says which one it is.
    const characters = Array.from(value);
    const shown = characters.length > 60 ? `${characters.slice(0, 57).join('')}…` : value;
    problems.push(`column ${column} (${field}) ${JSON.stringify(shown)} ${reasons}`);
  };
  LABEL_COLUMNS.forEach((field, i) => {
    const value = cells[i + 1] ?? '';
    if (value === '') return;
    const violations = labelViolations(value);
    if (violations.length === 0) labels[field] = value;
    else check(labelProblems, i + 2, field, value, violations);
  });
  customMetaColumns.forEach((field, i) => {
    const column = i + 1 + LABEL_COLUMNS.length;
    const value = cells[column] ?? '';
    customMeta[field] = null;
    if (value === '') return;
    const violations = customMetaViolations(value);
    if (violations.length === 0) customMeta[field] = value;
    else check(metaProblems, column + 1, field, value, violations);
  });
  const problems = [...labelProblems, ...metaProblems];
  if (problems.length === 0) return { labels, customMeta };
  const code = labelProblems.length > 0 ? 'INVALID_LABEL' : 'INVALID_CUSTOM_META';
  return { error: { code, message: `label file line ${line}: ${problems.join('; ')}` } };
}

function looksLikeHeader(cells: readonly string[]): boolean {
  const labelCellIsNoLabel = LABEL_COLUMNS.some((_, i) => {
    const value = cells[i + 1] ?? '';
    return value !== '' && labelViolations(value).length > 0;
  });
  const customCellIsItsName = CUSTOM_META_FIELDS.some(
    (field, i) => (cells[i + 1 + LABEL_COLUMNS.length] ?? '').toLowerCase() === field.toLowerCase(),
  );
  return labelCellIsNoLabel || customCellIsItsName;
}

// ---------------------------------------------------------------------------------------------------------------
// Planning the import
// ---------------------------------------------------------------------------------------------------------------

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
