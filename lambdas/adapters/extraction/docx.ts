/**
 * ZIP containers: a DOCX is a ZIP with `word/document.xml`; any other ZIP (XLSX, PPTX, an archive uploaded
 * under a document name) is not a document this service reads. A DOCX goes through mammoth to HTML, so headings,
 * paragraphs and tables come out as the HTML extraction renders them. mammoth is given the DOCX's XML parts only,
 * inflated here while they are counted, in a ZIP of their own: not the file, whose other bytes (images, embedded
 * files: most of a large DOCX) carry no text.
 */
import type { Readable } from 'node:stream';
import { crc32 } from 'node:zlib';
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

/** The parts mammoth reads: XML and relationships, and the style map it may have embedded itself (no extension). */
const XML_PART = /\.(xml|rels)$/i;
const STYLE_MAP_PART = 'mammoth/style-map';

/** One part of a DOCX, inflated. */
export interface DocxPart {
  readonly name: string;
  readonly data: Buffer;
}

/**
 * What a ZIP container holds, from its central directory; for a DOCX, its XML parts are then inflated, counting what
 * they really unpack to and stopping as soon as it passes `maxXmlBytes`, and kept for `docxToText`.
 */
export async function readZipContainer(
  bytes: Buffer,
  maxXmlBytes = MAX_DOCX_XML_BYTES,
): Promise<{ kind: ZipKind; parts: DocxPart[] }> {
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
      if (XML_PART.test(entry.fileName) || entry.fileName === STYLE_MAP_PART) {
        xmlParts.push(entry);
        declared += entry.uncompressedSize;
      }
    }
    const kind = (['docx', 'xlsx', 'pptx'] as const).find((candidate) => found.has(candidate)) ?? 'other';
    if (kind !== 'docx') return { kind, parts: [] };
    // The declared sizes can only make us refuse earlier, never accept.
    if (declared > maxXmlBytes) throw tooMuchXml(`declares ${declared} bytes`, maxXmlBytes);
    if (xmlParts.length > MAX_PARTS) {
      throw new ProcessingError(
        'FILE_TOO_LARGE',
        `The DOCX document has ${xmlParts.length} XML parts; the limit is ${MAX_PARTS}.`,
      );
    }
    let inflated = 0;
    const parts: DocxPart[] = [];
    for (const entry of xmlParts) {
      const data = await inflate(zip, entry, maxXmlBytes - inflated);
      if (!data) throw tooMuchXml(`unpacks to more than ${maxXmlBytes} bytes`, maxXmlBytes);
      inflated += data.length;
      parts.push({ name: entry.fileName, data });
    }
    return { kind, parts };
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

/**
 * Most XML parts in a DOCX: the ZIP handed to mammoth has no ZIP64 records (a Word document has a few dozen parts; a
 * file with this many is built to waste work).
 */
const MAX_PARTS = 0xffff;

/** What an entry inflates to, or undefined once that passes `budget`: read no further than `budget` + one chunk. */
async function inflate(zip: ZipFile, entry: Entry, budget: number): Promise<Buffer | undefined> {
  let size = 0;
  const chunks: Buffer[] = [];
  let stream: Readable | undefined;
  try {
    stream = await zip.openReadStreamPromise(entry);
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > budget) return undefined;
      chunks.push(chunk);
    }
  } catch {
    // yauzl's validateEntrySizes: the entry inflates to more, or less, than it declares.
    throw new ProcessingError('PARSE_ERROR', 'The DOCX document cannot be read: its content is damaged.');
  } finally {
    stream?.destroy();
  }
  return Buffer.concat(chunks, size);
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

/** The DOCX's text, from its XML parts (`readZipContainer`). */
export async function docxToText(parts: readonly DocxPart[]): Promise<string> {
  let html: string;
  try {
    // externalFileAccess: a DOCX must not make the worker read files of its own (false is also the default).
    ({ value: html } = await mammoth.convertToHtml(
      { buffer: storedZip(parts) },
      { convertImage: skipImage, externalFileAccess: false },
    ));
  } catch {
    throw new ProcessingError('PARSE_ERROR', 'The DOCX document cannot be read: its content is damaged.');
  }
  return htmlToText(html);
}

/**
 * A ZIP of `parts` stored as they are (no compression: mammoth reads them once), in the order given, so where a name
 * repeats the part mammoth reads is the one it read from the original file. Sizes fit 32 bits: at most
 * MAX_DOCX_XML_BYTES-sized caps of XML and MAX_PARTS parts.
 */
function storedZip(parts: readonly DocxPart[]): Buffer {
  const UTF8_NAMES = 0x0800;
  const pieces: Buffer[] = [];
  const directory: Buffer[] = [];
  let offset = 0;
  for (const { name, data } of parts) {
    const fileName = Buffer.from(name, 'utf8');
    const crc = crc32(data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4); // version needed
    local.writeUInt16LE(UTF8_NAMES, 6);
    local.writeUInt16LE(0, 8); // stored
    local.writeUInt32LE(0x00210000, 10); // 1980-01-01 00:00
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(data.length, 18);
    local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(fileName.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4); // made by
    central.writeUInt16LE(20, 6); // version needed
    central.writeUInt16LE(UTF8_NAMES, 8);
    central.writeUInt32LE(0x00210000, 12);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(data.length, 20);
    central.writeUInt32LE(data.length, 24);
    central.writeUInt16LE(fileName.length, 28);
    central.writeUInt32LE(offset, 42);
    pieces.push(local, fileName, data);
    directory.push(central, fileName);
    offset += local.length + fileName.length + data.length;
  }
  const directorySize = directory.reduce((sum, piece) => sum + piece.length, 0);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(parts.length, 8);
  end.writeUInt16LE(parts.length, 10);
  end.writeUInt32LE(directorySize, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...pieces, ...directory, end]);
}
