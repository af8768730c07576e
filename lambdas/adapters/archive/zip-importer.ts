/**
 * The ArchiveImporter of ZIP imports: reads the archive with the streaming reader (its caps apply while inflating),
 * then plans each file with the archive rules of core/processing/zip-import.ts (label CSV, per-file outcomes).
 * Accepted files are held in memory until they are stored as documents: the total is capped by `maxTotalBytes`.
 */
import {
  type AcceptedZipEntry,
  findLabelFile,
  isRejectedEntry,
  type LabelCsv,
  parseLabelCsv,
  planZipImport,
  type ZipEntry,
} from '../../core/processing/zip-import';
import type { ArchiveImporter, PlannedFile } from '../../core/processing/zip-job';
import { readZipArchive, type ZipLimits } from './zip-reader';

export class ZipArchiveImporter implements ArchiveImporter {
  constructor(private readonly limits: Partial<ZipLimits> = {}) {}

  async plan(archive: Buffer, requestLabels: { label1: string | null; label2: string | null }) {
    const entries: ZipEntry[] = [];
    const read = await readZipArchive(archive, this.limits, async (entry) => {
      entries.push(entry);
    });
    const labelFile = findLabelFile(entries).fileName;
    const labelEntry = entries.find((e) => e.fileName === labelFile);
    let labelCsv: LabelCsv | null = null;
    if (labelEntry && !isRejectedEntry(labelEntry)) labelCsv = parseLabelCsv((labelEntry as AcceptedZipEntry).bytes);
    const plan = planZipImport(entries, labelCsv, requestLabels);
    const bytesOf = new Map(
      entries.filter((e): e is AcceptedZipEntry => !isRejectedEntry(e)).map((e) => [e.fileName, e.bytes] as const),
    );
    const files: PlannedFile[] = plan.files.map((file) => {
      const bytes = bytesOf.get(file.fileName);
      if (file.error || !bytes) {
        return {
          fileName: file.fileName,
          error: file.error ?? { code: 'UNREADABLE_ENTRY', message: 'The entry could not be read' },
        };
      }
      return {
        fileName: file.fileName,
        baseName: file.baseName,
        bytes,
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
