/**
 * The large PDF and DOCX of the ingestion benchmark's memory figures (issue 20): files of a given size in bytes, as
 * people upload them, whose text is what the extraction caps allow at most (2,000 PDF pages; 8 MiB of DOCX XML) and
 * whose other bytes are an embedded image, as in most office files of that size. pdf-lib and docx write them.
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { Document, Packer, Paragraph } from 'docx';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { fromBuffer, type ZipFile as ReadZip } from 'yauzl';
import { ZipFile } from 'yazl';
import { paragraph, seededRandom } from './ingestion-corpus';

/** Text pages of the PDF: the extraction's page cap (MAX_PDF_PAGES). */
export const PDF_TEXT_PAGES = 2000;
const LINES_PER_PAGE = 45;
const CHARACTERS_PER_LINE = 90;
/** DOCX paragraphs of about 1.5 KB: about 6 MiB of XML, under the extraction's 8 MiB cap. */
export const DOCX_PARAGRAPHS = 3600;

/** A JPEG of `bytes` bytes that pdf-lib embeds as it is: a baseline frame header, then filler as its scan. */
function jpegOf(bytes: number): Buffer {
  const header = Buffer.from([
    0xff, 0xd8, 0xff, 0xc0, 0x00, 0x11, 0x08, 0x08, 0x00, 0x08, 0x00, 0x03, 0x01, 0x11, 0x00, 0x02, 0x11, 0x00, 0x03,
    0x11, 0x00,
  ]);
  return Buffer.concat([header, randomBytes(Math.max(0, bytes - header.length - 2)), Buffer.from([0xff, 0xd9])]);
}

function linesOf(random: () => number, count: number): string[] {
  const lines: string[] = [];
  let text = '';
  while (lines.length < count) {
    if (text.length < CHARACTERS_PER_LINE) text += ` ${paragraph(random)}`;
    const cut = text.lastIndexOf(' ', CHARACTERS_PER_LINE);
    lines.push(text.slice(0, cut > 0 ? cut : CHARACTERS_PER_LINE).trim());
    text = text.slice(cut > 0 ? cut : CHARACTERS_PER_LINE);
  }
  return lines;
}

/** A PDF of `bytes` bytes: PDF_TEXT_PAGES pages of text, and one image on the first page for the rest. */
export async function writeLargePdf(path: string, bytes: number, seed = 51): Promise<{ textCharacters: number }> {
  const random = seededRandom(seed);
  const build = async (imageBytes: number) => {
    const pdf = await PDFDocument.create();
    const font = await pdf.embedFont(StandardFonts.Helvetica);
    let textCharacters = 0;
    for (let p = 0; p < PDF_TEXT_PAGES; p++) {
      const page = pdf.addPage();
      const lines = linesOf(random, LINES_PER_PAGE);
      lines.forEach((line, i) => {
        page.drawText(line, { x: 40, y: 800 - i * 16, size: 10, font });
        textCharacters += line.length + 1;
      });
      if (p === 0 && imageBytes > 0) {
        const image = await pdf.embedJpg(jpegOf(imageBytes));
        page.drawImage(image, { x: 40, y: 40, width: 100, height: 100 });
      }
    }
    return { file: Buffer.from(await pdf.save()), textCharacters };
  };
  const withoutImage = await build(0);
  if (withoutImage.file.length >= bytes) throw new Error(`The PDF's text alone is ${withoutImage.file.length} bytes`);
  const { file, textCharacters } = await build(bytes - withoutImage.file.length);
  writeFileSync(path, file);
  return { textCharacters };
}

function entriesOf(zip: Buffer): Promise<{ name: string; data: Buffer }[]> {
  return new Promise((resolve, reject) => {
    fromBuffer(zip, { lazyEntries: true }, (error, archive?: ReadZip) => {
      if (error || !archive) return reject(error);
      const entries: { name: string; data: Buffer }[] = [];
      archive.on('entry', (entry) => {
        archive.openReadStream(entry, (streamError, stream) => {
          if (streamError || !stream) return reject(streamError);
          const parts: Buffer[] = [];
          stream.on('data', (part: Buffer) => parts.push(part));
          stream.on('end', () => {
            entries.push({ name: entry.fileName, data: Buffer.concat(parts) });
            archive.readEntry();
          });
        });
      });
      archive.on('end', () => resolve(entries));
      archive.on('error', reject);
      archive.readEntry();
    });
  });
}

function zipped(entries: readonly { name: string; data: Buffer; store?: boolean }[]): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const zip = new ZipFile();
    for (const entry of entries) zip.addBuffer(entry.data, entry.name, { compress: !entry.store });
    zip.end();
    const parts: Buffer[] = [];
    zip.outputStream.on('data', (part: Buffer) => parts.push(part));
    zip.outputStream.on('end', () => resolve(Buffer.concat(parts)));
    zip.outputStream.on('error', reject);
  });
}

/** A DOCX of `bytes` bytes: DOCX_PARAGRAPHS paragraphs of text, and an image (stored, as JPEG is) for the rest. */
export async function writeLargeDocx(path: string, bytes: number, seed = 52): Promise<{ textCharacters: number }> {
  const random = seededRandom(seed);
  const paragraphs = Array.from({ length: DOCX_PARAGRAPHS }, () => linesOf(random, 16).join(' '));
  const document = await Packer.toBuffer(
    new Document({ sections: [{ children: paragraphs.map((text) => new Paragraph(text)) }] }),
  );
  const entries = await entriesOf(document);
  const withoutImage = await zipped(entries);
  // The image's entry: its local header, central directory record and name (about 100 bytes) beside its data.
  const imageBytes = bytes - withoutImage.length - 100;
  if (imageBytes <= 0) throw new Error(`The DOCX's text alone is ${withoutImage.length} bytes`);
  const file = await zipped([...entries, { name: 'word/media/image1.jpeg', data: jpegOf(imageBytes), store: true }]);
  writeFileSync(path, file);
  return { textCharacters: paragraphs.reduce((sum, text) => sum + text.length + 1, 0) };
}
