/**
 * The rules of a ZIP import (spec "ZIP import"), with no I/O: which entry is the label file, how its rows are read,
 * and the labels (or the error) each file of the archive ends with. The archive itself is read by
 * `adapters/archive/zip-reader.ts`, which yields the entries planned here. Rules and choices: docs/zip-import.md.
 */
import { parse } from 'csv-parse/sync';
import { customDocumentId as customDocumentIdSchema } from '../knowledge/fields';
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
export type ZipFileErrorCode = ZipEntryRejectionCode | 'INVALID_LABEL' | 'INVALID_LABEL_ROW' | 'INVALID_LABEL_FILE';

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

/**
 * The label file is the one `.csv` at the archive root. Several `.csv` files at the root are ambiguous: none of
 * them is the label file and all are imported as documents (with a warning). A `.csv` inside a folder is always a
 * document.
 */
export function findLabelFile(entries: readonly ZipEntryInfo[]): LabelFileChoice {
  const rootCsvs = entries.filter(
    (e) =>
      !e.fileName.includes('/') && e.fileName.toLowerCase().endsWith('.csv') && e.rejected?.code !== 'DUPLICATE_ENTRY',
  );
  if (rootCsvs.length === 1) return { fileName: rootCsvs[0].fileName, warnings: [] };
  if (rootCsvs.length === 0) return { fileName: null, warnings: [] };
  const names = rootCsvs.map((e) => e.fileName).join(', ');
  return {
    fileName: null,
    warnings: [
      `${rootCsvs.length} CSV files at the archive root (${names}): none is used as the label file and all are imported as documents; keep exactly one CSV at the root for per-file labels`,
    ],
  };
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
  /** The labels of the row (an empty cell is null), or why they are not valid labels. */
  readonly result: { readonly labels: ZipLabels } | { readonly error: ZipProblem<'INVALID_LABEL'> };
}

export interface LabelCsv {
  /** Every non-empty row in file order, the header row included (it is told apart by `planZipImport`). */
  readonly rows: readonly LabelCsvRow[];
  /** Why the whole file is unusable (not UTF-8, broken quoting), or null. */
  readonly error: string | null;
  readonly warnings: readonly string[];
}

const LABEL_COLUMNS: readonly LabelColumn[] = ['label1', 'label2'];

/**
 * Parses the label file: columns identifier, label1, label2. Cells are trimmed; an empty label cell means "no
 * label"; columns after the third are ignored (with one warning); a UTF-8 BOM is skipped; the delimiter is a comma,
 * or a semicolon when the first line has semicolons and no comma (spreadsheets in some locales save that way).
 */
export function parseLabelCsv(csv: string | Uint8Array): LabelCsv {
  let text: string;
  try {
    text = typeof csv === 'string' ? csv : new TextDecoder('utf-8', { fatal: true }).decode(csv);
  } catch {
    return { rows: [], error: 'the label file is not UTF-8 text', warnings: [] };
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
    return { rows: [], error: `the label file is not valid CSV: ${reason}`, warnings: [] };
  }

  const rows: LabelCsvRow[] = [];
  const warnings: string[] = [];
  let extraColumnsWarned = false;
  for (const { record, info } of records) {
    const cells = record.map((cell) => cell.trim());
    if (cells.every((cell) => cell === '')) continue;
    if (!extraColumnsWarned && cells.slice(3).some((cell) => cell !== '')) {
      extraColumnsWarned = true;
      warnings.push(
        `label file line ${info.lines}: columns after the third are ignored (the columns are identifier, label1, label2)`,
      );
    }
    rows.push({ line: info.lines, identifier: cells[0] ?? '', result: labelsOfRow(cells, info.lines) });
  }
  return { rows, error: null, warnings };
}

function labelsOfRow(cells: readonly string[], line: number): LabelCsvRow['result'] {
  const problems: string[] = [];
  const labels: Record<LabelColumn, string | null> = { label1: null, label2: null };
  LABEL_COLUMNS.forEach((column, i) => {
    const value = cells[i + 1] ?? '';
    if (value === '') return;
    const violations = labelViolations(value);
    if (violations.length === 0) {
      labels[column] = value;
      return;
    }
    const reasons = violations.map((v) => `${v.message} (${v.rule})`).join('; ');
    problems.push(`column ${i + 2} (${column}) ${JSON.stringify(value)} ${reasons}`);
  });
  if (problems.length === 0) return { labels };
  return { error: { code: 'INVALID_LABEL', message: `label file line ${line}: ${problems.join('; ')}` } };
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

/** At most this many warnings are kept; the last one says how many more there were. */
export const MAX_WARNINGS = 50;

interface FileIndex {
  readonly byPath: Map<string, ZipEntryInfo[]>;
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
 * Primary course: the first row is dropped when it is a header; each remaining row names files by path, by base
 * name, or by custom document id; the first row naming a file gives it its labels; every file no row names gets
 * the request's labels.
 */
export function planZipImport(
  entries: readonly ZipEntryInfo[],
  labelCsv: LabelCsv | null,
  requestLabels: ZipLabels,
): ZipImportPlan {
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
    assignRows(labelCsv.rows, indexFiles(documents), labelFile, assignments, warnings);
  }

  const files = documents.map((entry): ZipFilePlan => {
    const assignment = assignments.get(entry);
    if (!assignment) {
      return { ...fileBase(entry), labels: requestLabels, labelRow: null, ...rejection(entry) };
    }
    const { row } = assignment;
    const labels = 'labels' in row.result ? row.result.labels : NO_LABELS;
    const error: ZipProblem<ZipFileErrorCode> | undefined =
      entry.rejected ??
      ('error' in row.result ? row.result.error : undefined) ??
      (assignment.ambiguous ? { code: 'INVALID_LABEL_ROW', message: assignment.ambiguous } : undefined);
    return {
      ...fileBase(entry),
      labels,
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

function indexFiles(files: readonly ZipEntryInfo[]): FileIndex {
  const index: FileIndex = { byPath: new Map(), byBaseName: new Map(), byStem: new Map() };
  const add = (map: Map<string, ZipEntryInfo[]>, key: string, file: ZipEntryInfo) => {
    const list = map.get(key);
    if (list) list.push(file);
    else map.set(key, [file]);
  };
  for (const file of files) {
    if (file.rejected?.code === 'DUPLICATE_ENTRY') continue;
    const baseName = baseNameOf(file.fileName);
    add(index.byPath, file.fileName, file);
    add(index.byBaseName, baseName, file);
    add(index.byStem, stemOf(baseName), file);
  }
  return index;
}

/**
 * What a row's identifier names: the file at that exact path; else every file with that base name; else, when the
 * identifier is a valid custom document id, the file whose base name without extension is that id.
 */
function resolve(identifier: string, index: FileIndex): Resolution {
  const byName = index.byPath.get(identifier) ?? index.byBaseName.get(identifier);
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
    // The header: a first row whose label cells are not labels and whose first cell is no file name (a header word
    // such as "id" may equal a file's name without extension). It is ignored silently.
    if (i === 0 && 'error' in row.result && resolution.kind !== 'name') return;
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
  if (identifier === labelFile) return 'it names the label file itself, which is not a document';
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
