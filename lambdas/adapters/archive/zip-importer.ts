/**
 * The ArchiveImporter of ZIP imports: reads the archive (a local copy) with the streaming reader, its caps applying
 * while inflating, and plans each file with the archive rules of core/processing/zip-import.ts (label CSV, per-file
 * outcomes). No file's content is kept by planning but one CSV's, the label file's candidate; each accepted file is
 * inflated again when it is stored as a document (a few side by side, within a byte budget: core/processing/zip-job.ts).
 */

import { type LabelCsv, parseLabelCsv } from '#core/processing/label-csv';
import { findLabelFile, LabelFileCandidate } from '#core/processing/label-file';
import {
  type AcceptedZipEntry,
  isRejectedEntry,
  type ZipEntryInfo,
  type ZipRequestMetadata,
} from '#core/processing/zip-entries';
import { planZipImport } from '#core/processing/zip-import';
import type { ArchiveImporter, OpenArchive, PlannedFile } from '#ports/zip-jobs';
import { DEFAULT_MAX_ARCHIVE_BYTES } from '#shared/config';
import { openZipFileReader, readZipArchive, type ZipFileReader, type ZipLimits } from './zip-reader';

export class ZipArchiveImporter implements ArchiveImporter {
  constructor(
    private readonly limits: Partial<ZipLimits> = {},
    readonly maxArchiveBytes = DEFAULT_MAX_ARCHIVE_BYTES,
  ) {}

  open(path: string): OpenArchive {
    let reader: Promise<ZipFileReader> | undefined;
    return {
      plan: (request) => this.plan(path, request),
      read: async (fileName) => {
        reader ??= openZipFileReader(path, this.limits);
        return (await reader).read(fileName);
      },
      close: () => {
        reader?.then((opened) => opened.close()).catch(() => undefined);
      },
    };
  }

  private async plan(path: string, request: ZipRequestMetadata) {
    const entries: ZipEntryInfo[] = [];
    const sizes = new Map<string, number>();
    // Which CSV is the label file is known only at the end (the label folder depends on every entry): the one
    // candidate's content is kept until then, and every other entry's is dropped as soon as it has been checked.
    const candidate = new LabelFileCandidate();
    let candidateCsv: AcceptedZipEntry | undefined;
    const read = await readZipArchive(path, this.limits, async (entry) => {
      entries.push(isRejectedEntry(entry) ? entry : { fileName: entry.fileName });
      const accepted = isRejectedEntry(entry) ? undefined : (entry as AcceptedZipEntry);
      if (candidate.offer(entry)) candidateCsv = accepted;
      else if (candidateCsv && candidate.fileName !== candidateCsv.fileName) candidateCsv = undefined;
      if (accepted) sizes.set(accepted.fileName, accepted.size);
    });
    const labelFile = findLabelFile(entries).fileName;
    const labelCsv: LabelCsv | null =
      labelFile !== null && candidateCsv?.fileName === labelFile ? parseLabelCsv(candidateCsv.bytes) : null;
    const plan = planZipImport(entries, labelCsv, request);
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
        ...file.labels,
        ...file.customMeta,
        customDocumentId: file.customDocumentId ?? null,
      };
    });
    const warnings = plan.warnings;
    return read.error
      ? { ok: false as const, error: read.error, files, warnings }
      : { ok: true as const, files, warnings };
  }
}
