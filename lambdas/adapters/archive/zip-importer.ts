/**
 * The ArchiveImporter of ZIP imports: reads the archive (a local copy) with the streaming reader, its caps applying
 * while inflating, and plans each file with the archive rules of core/processing/zip-import.ts (label CSV, per-file
 * outcomes). No file's content is kept by planning but the label CSV's; each accepted file is inflated again, one at
 * a time, when it is stored as a document.
 */
import {
  type AcceptedZipEntry,
  findLabelFile,
  isRejectedEntry,
  type LabelCsv,
  parseLabelCsv,
  planZipImport,
  type ZipEntryInfo,
} from '../../core/processing/zip-import';
import type { ArchiveImporter, OpenArchive, PlannedFile } from '../../core/processing/zip-job';
import { DEFAULT_MAX_ARCHIVE_BYTES } from '../../shared/config';
import { openZipFileReader, readZipArchive, type ZipFileReader, type ZipLimits } from './zip-reader';

export class ZipArchiveImporter implements ArchiveImporter {
  constructor(
    private readonly limits: Partial<ZipLimits> = {},
    readonly maxArchiveBytes = DEFAULT_MAX_ARCHIVE_BYTES,
  ) {}

  open(path: string): OpenArchive {
    let reader: Promise<ZipFileReader> | undefined;
    return {
      plan: (requestLabels) => this.plan(path, requestLabels),
      read: async (fileName) => {
        reader ??= openZipFileReader(path, this.limits);
        return (await reader).read(fileName);
      },
      close: () => {
        reader?.then((opened) => opened.close()).catch(() => undefined);
      },
    };
  }

  private async plan(path: string, requestLabels: { label1: string | null; label2: string | null }) {
    const entries: ZipEntryInfo[] = [];
    const sizes = new Map<string, number>();
    // The label file is the one .csv at the archive root: the first such entry is kept until the end, when it is
    // known whether it is the only one. Every other entry's content is dropped as soon as it has been checked.
    let rootCsv: AcceptedZipEntry | undefined;
    const read = await readZipArchive(path, this.limits, async (entry) => {
      entries.push(isRejectedEntry(entry) ? entry : { fileName: entry.fileName });
      if (isRejectedEntry(entry)) return;
      const accepted = entry as AcceptedZipEntry;
      sizes.set(accepted.fileName, accepted.size);
      if (!rootCsv && !accepted.fileName.includes('/') && accepted.fileName.toLowerCase().endsWith('.csv')) {
        rootCsv = accepted;
      }
    });
    const labelFile = findLabelFile(entries).fileName;
    const labelCsv: LabelCsv | null =
      labelFile !== null && rootCsv?.fileName === labelFile ? parseLabelCsv(rootCsv.bytes) : null;
    const plan = planZipImport(entries, labelCsv, requestLabels);
    const files: PlannedFile[] = plan.files.map((file) => {
      const size = sizes.get(file.fileName);
      if (file.error || size === undefined) {
        return {
          fileName: file.fileName,
          error: file.error ?? { code: 'UNREADABLE_ENTRY', message: 'The entry could not be read' },
        };
      }
      return {
        fileName: file.fileName,
        baseName: file.baseName,
        size,
        label1: file.labels.label1,
        label2: file.labels.label2,
        customDocumentId: file.customDocumentId ?? null,
      };
    });
    const warnings = plan.warnings;
    return read.error
      ? { ok: false as const, error: read.error, files, warnings }
      : { ok: true as const, files, warnings };
  }
}
