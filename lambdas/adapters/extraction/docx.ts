/**
 * ZIP containers: a DOCX is a ZIP with `word/document.xml`; any other ZIP (XLSX, PPTX, an archive uploaded
 * under a document name) is not a document this service reads. A DOCX goes through mammoth to HTML, so headings,
 * paragraphs and tables come out as the HTML extraction renders them.
 */
import mammoth from 'mammoth';
import { type Entry, fromBuffer, type ZipFile } from 'yauzl';
import { ProcessingError } from '../../core/processing/errors';
import { htmlToText } from './html';

/** Entries that tell what an Office container holds (a Map: entry names are the uploader's strings). */
const MAIN_PARTS = new Map<string, ZipKind>([
  ['word/document.xml', 'docx'],
  ['xl/workbook.xml', 'xlsx'],
  ['ppt/presentation.xml', 'pptx'],
]);

/**
 * Most XML a DOCX may unpack to, as its entries declare: mammoth parses it all in memory (several times its
 * size), and a small DOCX can declare gigabytes (a zip bomb). 100 MiB of XML is tens of thousands of pages.
 */
export const MAX_DOCX_XML_BYTES = 100 * 1024 * 1024;

export type ZipKind = 'docx' | 'xlsx' | 'pptx' | 'other';

/** What a ZIP container holds, from its central directory; nothing is inflated. */
export async function zipKind(bytes: Buffer): Promise<ZipKind> {
  let zip: ZipFile;
  try {
    zip = await openZip(bytes);
  } catch {
    throw new ProcessingError(
      'PARSE_ERROR',
      'The file is a damaged ZIP container (a DOCX is one): it cannot be opened.',
    );
  }
  const found = new Set<ZipKind>();
  let xmlBytes = 0;
  try {
    await new Promise<void>((resolve, reject) => {
      zip.on('entry', (entry: Entry) => {
        const part = MAIN_PARTS.get(entry.fileName);
        if (part) found.add(part);
        if (/\.(xml|rels)$/i.test(entry.fileName)) xmlBytes += entry.uncompressedSize;
        zip.readEntry();
      });
      zip.on('end', resolve);
      zip.on('error', () =>
        reject(
          new ProcessingError('PARSE_ERROR', 'The file is a damaged ZIP container: its entries cannot be listed.'),
        ),
      );
      zip.readEntry();
    });
  } finally {
    zip.close();
  }
  const kind = (['docx', 'xlsx', 'pptx'] as const).find((candidate) => found.has(candidate)) ?? 'other';
  if (kind === 'docx' && xmlBytes > MAX_DOCX_XML_BYTES) {
    throw new ProcessingError(
      'FILE_TOO_LARGE',
      `The DOCX document unpacks to ${xmlBytes} bytes of XML, more than the ${MAX_DOCX_XML_BYTES} allowed.`,
    );
  }
  return kind;
}

function openZip(bytes: Buffer): Promise<ZipFile> {
  return new Promise((resolve, reject) => {
    fromBuffer(bytes, { lazyEntries: true }, (error, zip) => (error ? reject(error) : resolve(zip)));
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
