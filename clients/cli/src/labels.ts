/**
 * The labels of `aps kb sync --labels-csv`: the columns of a ZIP import's label file (docs/zip-import.md, "Label
 * file"): identifier, label1, label2, then optionally customMeta1..4. The identifier names a file by its path in the
 * folder, else every file of that base name, else (a valid custom document id) the file whose base name without its
 * extension it is, which then gets that customDocumentId, as a ZIP import gives it. An empty cell is "none"; a
 * custom metadata column the file does not have is left as it is. A first row that names no file is a header.
 */
import { basename, extname } from 'node:path';
import { parse } from 'csv-parse/sync';

export const CUSTOM_META_FIELDS = ['customMeta1', 'customMeta2', 'customMeta3', 'customMeta4'] as const;
export type MetadataField = 'label1' | 'label2' | (typeof CUSTOM_META_FIELDS)[number];
/** The fields a sync sets: a value, or null for none; a field left out is left as the document has it. */
export type Metadata = Partial<Record<MetadataField, string | null>>;

export interface LabelFile {
  /** The metadata of the files the rows name (by path), with the customDocumentId a row gave by name. */
  readonly byPath: ReadonlyMap<string, { metadata: Metadata; customDocumentId?: string }>;
  readonly warnings: readonly string[];
}

const CUSTOM_DOCUMENT_ID = /^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$/;

export function readLabelFile(text: string, paths: readonly string[]): LabelFile {
  const clean = text.replace(/^\uFEFF/, '');
  const firstLine = clean.match(/^.*\S.*$/m)?.[0] ?? '';
  const delimiter = !firstLine.includes(',') && firstLine.includes(';') ? ';' : ',';
  const records = (
    parse(clean, {
      delimiter,
      info: true,
      relax_column_count: true,
      relax_quotes: true,
      skip_empty_lines: true,
      trim: true,
    }) as unknown as { record: string[]; info: { lines: number } }[]
  )
    .map(({ record, info }) => ({ cells: record.map((cell) => cell.trim()), line: info.lines }))
    .filter(({ cells }) => cells.some((cell) => cell !== ''));
  const width = Math.min(7, Math.max(0, ...records.map(({ cells }) => cells.length)));
  const metaColumns = CUSTOM_META_FIELDS.slice(0, Math.max(0, width - 3));

  const byPath = new Map<string, { metadata: Metadata; customDocumentId?: string }>();
  const warnings: string[] = [];
  records.forEach(({ cells, line }, index) => {
    const identifier = cells[0] ?? '';
    const named = filesNamed(identifier, paths);
    if (named.paths.length === 0) {
      // A first row naming no file is the header; another is a mistake worth saying.
      if (index > 0) warnings.push(`labels line ${line}: ${JSON.stringify(identifier)} names no file of the folder`);
      return;
    }
    if (named.ambiguous) {
      warnings.push(`labels line ${line}: ${JSON.stringify(identifier)} names several files; none gets its labels`);
      return;
    }
    const metadata: Metadata = { label1: cells[1] || null, label2: cells[2] || null };
    metaColumns.forEach((field, i) => {
      metadata[field] = cells[3 + i] || null;
    });
    for (const path of named.paths) {
      byPath.set(path, { metadata, ...(named.customDocumentId ? { customDocumentId: named.customDocumentId } : {}) });
    }
  });
  return { byPath, warnings };
}

function filesNamed(
  identifier: string,
  paths: readonly string[],
): { paths: string[]; ambiguous?: true; customDocumentId?: string } {
  if (identifier === '') return { paths: [] };
  if (paths.includes(identifier)) return { paths: [identifier] };
  const sameName = paths.filter((path) => basename(path) === identifier);
  if (sameName.length > 0) return { paths: sameName };
  if (!CUSTOM_DOCUMENT_ID.test(identifier)) return { paths: [] };
  const byId = paths.filter((path) => basename(path, extname(path)) === identifier);
  if (byId.length > 1) return { paths: byId, ambiguous: true };
  return { paths: byId, customDocumentId: identifier };
}
