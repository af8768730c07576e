/**
 * Which entry of a ZIP archive is its label file (spec "ZIP import"): a CSV or text file directly in the archive's
 * label folder (its root, or the one folder everything is in), chosen by name; docs/zip-import.md has the rules.
 */

import type { ZipEntryInfo } from './zip-entries';

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
