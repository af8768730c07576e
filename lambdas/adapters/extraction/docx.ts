/**
 * ZIP containers: a DOCX is a ZIP with `word/document.xml`; any other ZIP (XLSX, PPTX, an archive uploaded
 * under a document name) is not a document this service reads. A DOCX goes through mammoth to HTML, so headings,
 * paragraphs and tables come out as the HTML extraction renders them.
 */
import type { Readable } from 'node:stream';
import mammoth from 'mammoth';
import { type Entry, fromBuffer, type ZipFile } from 'yauzl';
import { ProcessingError } from '#core/processing/errors';
import { htmlToText } from './html';

/** Entries that tell what an Office container holds (a Map: entry names are the uploader's strings). */
const MAIN_PARTS = new Map<string, ZipKind>([
  ['word/document.xml', 'docx'],
  ['xl/workbook.xml', 'xlsx'],
  ['ppt/presentation.xml', 'pptx'],
]);

/**
 * Most XML a DOCX may unpack to, counted while inflating (the sizes an archive declares can lie). mammoth parses it
 * all in memory, at about 110 MB per MiB of XML measured here (12 MiB: 1.4 GB, 15 s): 8 MiB of XML, several
 * hundred pages of text, fits the extraction's memory limit with room to spare.
 */
export const MAX_DOCX_XML_BYTES = 8 * 1024 * 1024;

export type ZipKind = 'docx' | 'xlsx' | 'pptx' | 'other';

const XML_PART = /\.(xml|rels)$/i;

/**
 * What a ZIP container holds, from its central directory; for a DOCX, its XML parts are then inflated (and thrown
 * away) to count what they really unpack to, stopping as soon as it passes `maxXmlBytes`.
 */
export async function zipKind(bytes: Buffer, maxXmlBytes = MAX_DOCX_XML_BYTES): Promise<ZipKind> {
  let zip: ZipFile;
  try {
    zip = await openZip(bytes);
  } catch {
    throw new ProcessingError(
      'PARSE_ERROR',
      'The file is a damaged ZIP container (a DOCX is one): it cannot be opened.',
    );
  }
  // A late error (while closing, after the iterator let go) must not become an uncaught 'error' event.
  zip.on('error', () => {});
  try {
    const found = new Set<ZipKind>();
    const xmlParts: Entry[] = [];
    let declared = 0;
    for await (const entry of listEntries(zip)) {
      const part = MAIN_PARTS.get(entry.fileName);
      if (part) found.add(part);
      if (XML_PART.test(entry.fileName)) {
        xmlParts.push(entry);
        declared += entry.uncompressedSize;
      }
    }
    const kind = (['docx', 'xlsx', 'pptx'] as const).find((candidate) => found.has(candidate)) ?? 'other';
    if (kind !== 'docx') return kind;
    // The declared sizes can only make us refuse earlier, never accept.
    if (declared > maxXmlBytes) throw tooMuchXml(`declares ${declared} bytes`, maxXmlBytes);
    let inflated = 0;
    for (const entry of xmlParts) {
      inflated += await countInflated(zip, entry, maxXmlBytes - inflated);
      if (inflated > maxXmlBytes) throw tooMuchXml(`unpacks to more than ${maxXmlBytes} bytes`, maxXmlBytes);
    }
    return kind;
  } finally {
    zip.close();
  }
}

function tooMuchXml(what: string, maxXmlBytes: number): ProcessingError {
  return new ProcessingError(
    'FILE_TOO_LARGE',
    `The DOCX document ${what} of XML; the limit is ${maxXmlBytes} bytes (about ${Math.round(maxXmlBytes / 1024 / 1024)} MiB).`,
  );
}

async function* listEntries(zip: ZipFile): AsyncGenerator<Entry> {
  try {
    for await (const entry of zip.eachEntry()) yield entry;
  } catch (error) {
    if (error instanceof ProcessingError) throw error;
    throw new ProcessingError('PARSE_ERROR', 'The file is a damaged ZIP container: its entries cannot be listed.');
  }
}

/** Bytes an entry inflates to, reading no further than `budget` + one chunk. */
async function countInflated(zip: ZipFile, entry: Entry, budget: number): Promise<number> {
  let size = 0;
  let stream: Readable | undefined;
  try {
    stream = await zip.openReadStreamPromise(entry);
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > budget) break;
    }
  } catch {
    // yauzl's validateEntrySizes: the entry inflates to more, or less, than it declares.
    throw new ProcessingError('PARSE_ERROR', 'The DOCX document cannot be read: its content is damaged.');
  } finally {
    stream?.destroy();
  }
  return size;
}

function openZip(bytes: Buffer): Promise<ZipFile> {
  return new Promise((resolve, reject) => {
    fromBuffer(bytes, { lazyEntries: true, validateEntrySizes: true, autoClose: false }, (error, zip) =>
      error ? reject(error) : resolve(zip),
    );
  });
}

/** Images are dropped before they are base64-encoded into the HTML: they carry no text. */
const skipImage = mammoth.images.imgElement(async () => ({ src: '' }));

export async function docxToText(bytes: Buffer): Promise<string> {
  let html: string;
  try {
    // externalFileAccess: a DOCX must not make the worker read files of its own (false is also the default).
    ({ value: html } = await mammoth.convertToHtml(
      { buffer: bytes },
      { convertImage: skipImage, externalFileAccess: false },
    ));
  } catch {
    throw new ProcessingError('PARSE_ERROR', 'The DOCX document cannot be read: its content is damaged.');
  }
  return htmlToText(html);
}
