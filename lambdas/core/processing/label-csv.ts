/**
 * The rows of a ZIP archive's label file: a file identifier, then label1, label2 and the four custom metadata fields,
 * with or without a header row; each row's values checked by the rules of the single-document API.
 */
import { parse } from 'csv-parse/sync';
import { CUSTOM_META_FIELDS, type CustomMetaField, customMetaViolations } from '#core/knowledge/fields';
import { labelViolations } from '#core/knowledge/labels';
import type { ZipCustomMeta, ZipLabels, ZipProblem } from './zip-entries';

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

export function looksLikeHeader(cells: readonly string[]): boolean {
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
