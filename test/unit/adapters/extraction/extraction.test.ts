import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import {
  Document,
  FootnoteReferenceRun,
  HeadingLevel,
  ImageRun,
  Packer,
  Paragraph,
  Table,
  TableCell,
  TableRow,
  TextRun,
} from 'docx';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { ZipFile } from 'yazl';
import { MAX_DOCX_XML_BYTES } from '#adapters/extraction/docx';
import { looksLikeHtml } from '#adapters/extraction/html';
import { DocumentTextExtractor } from '#adapters/extraction/text-extractor';
import { ProcessingError } from '#core/processing/errors';
import type { ChildInput, ChildOutcome } from '../../../helpers/extract-in-child';

const extractor = new DocumentTextExtractor();
const extract = (bytes: Buffer | string, fileName: string, contentType = 'application/octet-stream') =>
  extractor.extract(typeof bytes === 'string' ? Buffer.from(bytes, 'utf8') : bytes, { fileName, contentType });

async function expectFailure(outcome: Promise<unknown>, code: string): Promise<ProcessingError> {
  const error = await outcome.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(ProcessingError);
  expect(error).toMatchObject({ code });
  return error as ProcessingError;
}

const PAGE_ONE = ['The harbour opens at dawn.', 'Boats leave before noon.'];
const PAGE_TWO = ['Fishermen return in the evening.', 'The fish market closes at nine.'];

async function twoPagePdf(): Promise<Buffer> {
  const pdf = await PDFDocument.create();
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  for (const sentences of [PAGE_ONE, PAGE_TWO]) {
    const page = pdf.addPage([595, 842]);
    for (const [line, sentence] of sentences.entries()) {
      page.drawText(sentence, { x: 72, y: 770 - line * 16, size: 12, font });
    }
  }
  return Buffer.from(await pdf.save());
}

async function blankPdf(): Promise<Buffer> {
  const pdf = await PDFDocument.create();
  pdf.addPage([595, 842]);
  return Buffer.from(await pdf.save());
}

function zip(entries: Record<string, string>): Promise<Buffer> {
  const archive = new ZipFile();
  for (const [name, content] of Object.entries(entries)) archive.addBuffer(Buffer.from(content), name);
  archive.end();
  const parts: Buffer[] = [];
  return new Promise((resolve, reject) => {
    archive.outputStream.on('data', (part: Buffer) => parts.push(part));
    archive.outputStream.on('end', () => resolve(Buffer.concat(parts)));
    archive.outputStream.on('error', reject);
  });
}

async function reportDocx(): Promise<Buffer> {
  const cell = (text: string) => new TableCell({ children: [new Paragraph(text)] });
  const document = new Document({
    sections: [
      {
        children: [
          new Paragraph({ text: 'Quarterly report', heading: HeadingLevel.HEADING_1 }),
          new Paragraph('Revenue grew in every region. The north led again.'),
          new Table({
            rows: [
              new TableRow({ children: [cell('Region'), cell('Revenue')] }),
              new TableRow({ children: [cell('North'), cell('120')] }),
              new TableRow({ children: [cell('South'), cell('95')] }),
            ],
          }),
        ],
      },
    ],
  });
  return Packer.toBuffer(document);
}

/**
 * pdfjs-dist is ESM only and jest cannot load it: PDFs go through the real extractor in one child process
 * (`node --import tsx`), all cases in one run, so the cost of starting it is paid once.
 */
function extractInChild(inputs: { bytes: Buffer; fileName: string }[]): ChildOutcome[] {
  const payload: ChildInput[] = inputs.map(({ bytes, fileName }) => ({
    bytes: bytes.toString('base64'),
    fileName,
    contentType: 'application/octet-stream',
  }));
  const stdout = execFileSync(
    process.execPath,
    ['--import', 'tsx', path.join(__dirname, '../../../helpers/extract-in-child.ts')],
    {
      cwd: path.resolve(__dirname, '../../../..'),
      input: JSON.stringify(payload),
      maxBuffer: 64 * 1024 * 1024,
    },
  );
  return JSON.parse(stdout.toString('utf8')) as ChildOutcome[];
}

describe('PDF extraction (in a child process)', () => {
  let outcomes: Record<'twoPages' | 'pdfNamedTxt' | 'truncated' | 'garbageAfterMagic' | 'blank', ChildOutcome>;

  beforeAll(async () => {
    const pdf = await twoPagePdf();
    const cases = {
      twoPages: { bytes: pdf, fileName: 'harbour.pdf' },
      pdfNamedTxt: { bytes: pdf, fileName: 'harbour.txt' },
      truncated: { bytes: pdf.subarray(0, Math.floor(pdf.length / 2)), fileName: 'harbour.pdf' },
      garbageAfterMagic: { bytes: Buffer.from('%PDF-1.7\nthis is not a PDF body at all\n'), fileName: 'x.pdf' },
      blank: { bytes: await blankPdf(), fileName: 'blank.pdf' },
    };
    const results = extractInChild(Object.values(cases));
    outcomes = Object.fromEntries(Object.keys(cases).map((key, index) => [key, results[index]])) as typeof outcomes;
  });

  it('extracts the sentences of both pages in page order', () => {
    const outcome = outcomes.twoPages;
    if (!outcome.ok) throw new Error(`extraction failed: ${outcome.message}`);
    expect(outcome.format).toBe('pdf');
    const positions = [...PAGE_ONE, ...PAGE_TWO].map((sentence) => outcome.text.indexOf(sentence));
    expect(positions.every((position) => position >= 0)).toBe(true);
    expect([...positions].sort((a, b) => a - b)).toEqual(positions);
    expect(outcome.text).toContain('\n\n'); // pages are paragraphs apart
  });

  it('extracts PDF bytes as a PDF even under a .txt name (content wins over the name)', () => {
    expect(outcomes.pdfNamedTxt).toMatchObject({ ok: true, format: 'pdf' });
    expect(outcomes.pdfNamedTxt.ok && outcomes.pdfNamedTxt.text).toContain(PAGE_TWO[1]);
  });

  it('fails a truncated PDF with PARSE_ERROR', () => {
    expect(outcomes.truncated).toMatchObject({ ok: false, name: 'ProcessingError', code: 'PARSE_ERROR' });
  });

  it('fails a file with the PDF signature but no PDF structure with PARSE_ERROR', () => {
    expect(outcomes.garbageAfterMagic).toMatchObject({ ok: false, name: 'ProcessingError', code: 'PARSE_ERROR' });
  });

  it('fails a PDF without any text (a scan) with EMPTY_DOCUMENT', () => {
    expect(outcomes.blank).toMatchObject({ ok: false, name: 'ProcessingError', code: 'EMPTY_DOCUMENT' });
  });
});

describe('DOCX extraction', () => {
  it('keeps the heading as written, the paragraph, and one table row per line with cells apart', async () => {
    const { text, format } = await extract(await reportDocx(), 'report.docx');
    expect(format).toBe('docx');
    expect(text).toContain('Quarterly report');
    expect(text).not.toContain('QUARTERLY');
    expect(text).toContain('Revenue grew in every region. The north led again.');
    expect(text.split('\n')).toEqual(expect.arrayContaining(['Region | Revenue', 'North | 120', 'South | 95']));
    expect(text.indexOf('Quarterly report')).toBeLessThan(text.indexOf('Region | Revenue'));
  });

  it('reads the parts beside the document (styles, footnotes) and drops an embedded image, of which it reads nothing', async () => {
    // mammoth is given the DOCX's XML parts only: the image's bytes (random, so they do not compress) stay behind.
    const picture = Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), randomBytes(200_000)]);
    const docx = await Packer.toBuffer(
      new Document({
        footnotes: { 1: { children: [new Paragraph('Tides are listed in local time.')] } },
        sections: [
          {
            children: [
              new Paragraph({ text: 'Harbour guide', heading: HeadingLevel.HEADING_1 }),
              new Paragraph({
                children: [
                  new TextRun('Before the picture.'),
                  new ImageRun({ type: 'png', data: picture, transformation: { width: 10, height: 10 } }),
                  new TextRun(' After the picture.'),
                  new FootnoteReferenceRun(1),
                ],
              }),
            ],
          },
        ],
      }),
    );
    expect(docx.length).toBeGreaterThan(200_000);
    const { text, format } = await extract(docx, 'guide.docx');
    expect(format).toBe('docx');
    expect(text.split('\n')).toEqual(
      expect.arrayContaining(['Harbour guide', 'Before the picture. After the picture.[1]']),
    );
    expect(text).toContain('Tides are listed in local time.');
  });

  it('recognizes a DOCX by its content under any name', async () => {
    expect(await extract(await reportDocx(), 'upload.bin')).toMatchObject({ format: 'docx' });
  });

  it('fails a truncated DOCX with PARSE_ERROR', async () => {
    const docx = await reportDocx();
    await expectFailure(extract(docx.subarray(0, docx.length - 200), 'report.docx'), 'PARSE_ERROR');
  });

  it('fails a DOCX declaring more XML than allowed (a zip bomb) with FILE_TOO_LARGE, before inflating it', async () => {
    const bomb = await zip({ 'word/document.xml': '<w:document/>' });
    // Patch the uncompressed size the central directory declares for the entry (offset 24 of its header).
    const header = bomb.lastIndexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02]));
    bomb.writeUInt32LE(MAX_DOCX_XML_BYTES + 1, header + 24);
    await expectFailure(extract(bomb, 'bomb.docx'), 'FILE_TOO_LARGE');
  });

  it('fails a ZIP whose word/document.xml is not a document with PARSE_ERROR', async () => {
    await expectFailure(extract(await zip({ 'word/document.xml': 'not xml <' }), 'fake.docx'), 'PARSE_ERROR');
  });
});

describe('ZIP containers that are not DOCX', () => {
  it('fails a plain ZIP archive with UNSUPPORTED_TYPE', async () => {
    const error = await expectFailure(extract(await zip({ 'notes.txt': 'hello' }), 'notes.docx'), 'UNSUPPORTED_TYPE');
    expect(error.message).toMatch(/ZIP archive/);
  });

  it('fails an XLSX workbook with UNSUPPORTED_TYPE and says why', async () => {
    const workbook = await zip({ '[Content_Types].xml': '<Types/>', 'xl/workbook.xml': '<workbook/>' });
    const error = await expectFailure(extract(workbook, 'sales.xlsx'), 'UNSUPPORTED_TYPE');
    expect(error.message).toMatch(/Excel/);
  });
});

describe('HTML extraction', () => {
  const page = `<!DOCTYPE html>
<html><head><title>Hours</title><style>p { color: red }</style></head>
<body>
  <h1>Opening hours</h1>
  <p>We open at <a href="https://example.com/hours">nine</a> every day.</p>
  <table>
    <thead><tr><th>Day</th><th>Hours</th></tr></thead>
    <tbody><tr><td>Monday</td><td>9 to 17</td></tr><tr><td>Sunday</td><td>closed</td></tr></tbody>
  </table>
  <script>var secret = "script text must not be indexed";</script>
  <noscript>Enable scripts</noscript>
</body></html>`;

  it('keeps headings as written, drops link URLs, scripts and styles, and separates table cells', async () => {
    const { text, format } = await extract(page, 'hours.html', 'text/html');
    expect(format).toBe('html');
    expect(text).toContain('Opening hours');
    expect(text).not.toContain('OPENING');
    expect(text).toContain('We open at nine every day.');
    expect(text).not.toMatch(/https?:|example\.com/);
    expect(text).not.toMatch(/secret|script text|color: red|Enable scripts/);
    expect(text.split('\n')).toEqual(expect.arrayContaining(['Day | Hours', 'Monday | 9 to 17', 'Sunday | closed']));
  });

  it('recognizes an HTML document by its content under a .txt name', async () => {
    expect(await extract(page, 'hours.txt', 'text/plain')).toMatchObject({ format: 'html' });
  });

  it('looks past leading comments, and reads a run of empty comments that is not HTML as text', async () => {
    expect(looksLikeHtml(`<!-- a -->\n<!---->  <!DOCTYPE html><p>x</p>`)).toBe(true);
    expect(looksLikeHtml('<!-- unclosed <html>')).toBe(false);
    // 281 bytes that the old regex backtracked on for about 1.5 hours: now one pass over the comments.
    const hostile = `${'<!---->'.repeat(40)}x`;
    expect(looksLikeHtml(hostile)).toBe(false);
    expect(looksLikeHtml(`${'<!---->'.repeat(40)}<html>`)).toBe(true);
    expect(await extract(hostile, 'notes.txt', 'text/plain')).toEqual({ format: 'text', text: hostile });
  });

  it('fails a page with no visible text with EMPTY_DOCUMENT', async () => {
    await expectFailure(extract('<html><body><script>x()</script></body></html>', 'a.html'), 'EMPTY_DOCUMENT');
  });
});

describe('CSV extraction', () => {
  it('renders each row as header: value pairs', async () => {
    const csv = 'name,city,age\nAda,London,36\nAlan,"Wilmslow, Cheshire",41\nGrace,,85\n';
    const { text, format } = await extract(csv, 'people.csv', 'text/csv');
    expect(format).toBe('csv');
    expect(text.split('\n')).toEqual([
      'name: Ada; city: London; age: 36',
      'name: Alan; city: Wilmslow, Cheshire; age: 41',
      'name: Grace; age: 85',
    ]);
  });

  it('reads a semicolon-separated file exported by a spreadsheet', async () => {
    const { text } = await extract('\ufeffproduct;price\nLamp;25,50\n', 'prices.csv');
    expect(text).toBe('product: Lamp; price: 25,50');
  });

  it('fails a malformed CSV (an unclosed quote) with PARSE_ERROR', async () => {
    const error = await expectFailure(extract('name,city\n"Ada,London\n', 'people.csv'), 'PARSE_ERROR');
    expect(error.message).not.toContain('Ada'); // the message names the place, never the content
  });

  it('fails a CSV with a header and no values with EMPTY_DOCUMENT', async () => {
    await expectFailure(extract('name,city\n', 'people.csv'), 'EMPTY_DOCUMENT');
  });
});

describe('JSON extraction', () => {
  it('renders nested values as key.path: value lines in document order', async () => {
    const json = JSON.stringify({
      product: { name: 'Desk lamp', tags: ['desk', 'led'], price: { amount: 25.5, currency: 'EUR' } },
      discontinued: false,
      notes: null,
      variants: [{ colour: 'black' }, {}],
    });
    const { text, format } = await extract(json, 'catalogue.json', 'application/json');
    expect(format).toBe('json');
    expect(text.split('\n')).toEqual([
      'product.name: Desk lamp',
      'product.tags[0]: desk',
      'product.tags[1]: led',
      'product.price.amount: 25.5',
      'product.price.currency: EUR',
      'discontinued: false',
      'variants[0].colour: black',
    ]);
  });

  it('reads a deeply nested document without overflowing the stack', async () => {
    const depth = 20_000;
    const json = `${'{"a":'.repeat(depth)}"bottom"${'}'.repeat(depth)}`;
    const { text } = await extract(json, 'deep.json');
    expect(text.endsWith('a: bottom')).toBe(true);
  });

  it('fails invalid JSON with PARSE_ERROR', async () => {
    await expectFailure(extract('{"product": {"name": "Desk lamp",}', 'catalogue.json'), 'PARSE_ERROR');
  });

  it('fails an empty .json file with EMPTY_DOCUMENT rather than PARSE_ERROR', async () => {
    await expectFailure(extract('  \n', 'catalogue.json'), 'EMPTY_DOCUMENT');
  });
});

describe('Markdown and plain text', () => {
  it('keeps Markdown text and its structure marks', async () => {
    const markdown =
      '# Release notes\n\nThe *search* is faster.\n\n- fewer allocations\n- a new [index](https://x.test)\n';
    const { text, format } = await extract(markdown, 'NOTES.md', 'text/markdown');
    expect(format).toBe('markdown');
    expect(text).toBe(
      '# Release notes\n\nThe *search* is faster.\n\n- fewer allocations\n- a new [index](https://x.test)',
    );
  });

  it('collapses runs of spaces, trims lines and keeps one blank line between paragraphs', async () => {
    const { text, format } = await extract(
      '  First \t  line\r\nsecond\u00a0 line \n\n\n\n\nNext   paragraph.  ',
      'a.txt',
    );
    expect(format).toBe('text');
    expect(text).toBe('First line\nsecond line\n\nNext paragraph.');
  });

  it('treats a file with an unknown name as plain text', async () => {
    expect(await extract('Just some words.', 'README', 'application/octet-stream')).toEqual({
      text: 'Just some words.',
      format: 'text',
    });
  });

  it('reads a name whose extension is an Object property (notes.constructor) as plain text', async () => {
    expect(await extract('Some notes.', 'notes.constructor', 'constructor')).toEqual({
      text: 'Some notes.',
      format: 'text',
    });
  });

  it('uses the content type when the name has no known extension', async () => {
    expect(await extract('a,b\n1,2\n', 'export', 'text/csv; charset=utf-8')).toEqual({
      text: 'a: 1; b: 2',
      format: 'csv',
    });
  });
});

describe('encodings', () => {
  const sample = 'Grüße aus Köln.\r\nZweite Zeile — mit Gedankenstrich.';
  const expected = 'Grüße aus Köln.\nZweite Zeile — mit Gedankenstrich.';

  it('decodes UTF-16 little endian with a BOM', async () => {
    const bytes = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(sample, 'utf16le')]);
    expect(await extract(bytes, 'greeting.txt')).toEqual({ text: expected, format: 'text' });
  });

  it('decodes UTF-16 big endian with a BOM', async () => {
    const bytes = Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from(sample, 'utf16le').swap16()]);
    expect(await extract(bytes, 'greeting.txt')).toEqual({ text: expected, format: 'text' });
  });

  it('removes a UTF-8 BOM', async () => {
    const bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(sample, 'utf8')]);
    expect((await extract(bytes, 'greeting.txt')).text).toBe(expected);
  });

  it('reads a legacy Windows-1252 file', async () => {
    const bytes = Buffer.from([...Buffer.from('Caf'), 0xe9, ...Buffer.from(' au lait, 3 '), 0x80]);
    expect((await extract(bytes, 'menu.txt')).text).toBe('Café au lait, 3 €');
  });
});

describe('binary and empty files', () => {
  it('fails a PNG image with UNSUPPORTED_TYPE, whatever its name', async () => {
    const png = Buffer.from([
      ...[0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a],
      ...[0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x01, 0x00],
    ]);
    const error = await expectFailure(extract(png, 'photo.txt'), 'UNSUPPORTED_TYPE');
    expect(error.message).toMatch(/PNG/);
  });

  it('fails bytes with NULs and no known signature with UNSUPPORTED_TYPE', async () => {
    const bytes = Buffer.from([0x01, 0x02, 0x00, 0x41, 0x42, 0x00, 0x00, 0x43]);
    await expectFailure(extract(bytes, 'data.txt'), 'UNSUPPORTED_TYPE');
  });

  it('fails random bytes without NULs (like compressed data) with UNSUPPORTED_TYPE', async () => {
    let state = 42;
    const random = () => {
      state = (state * 1103515245 + 12345) % 2 ** 31;
      return 1 + (state % 255); // never 0
    };
    for (const length of [64, 4096]) {
      const bytes = Buffer.from(Array.from({ length }, random));
      await expectFailure(extract(bytes, 'blob.txt'), 'UNSUPPORTED_TYPE');
    }
  });

  it('fails an empty file with EMPTY_DOCUMENT', async () => {
    await expectFailure(extract(Buffer.alloc(0), 'empty.txt'), 'EMPTY_DOCUMENT');
  });

  it('fails a whitespace-only file with EMPTY_DOCUMENT', async () => {
    await expectFailure(extract(' \n\t\r\n  ', 'blank.md'), 'EMPTY_DOCUMENT');
  });
});
