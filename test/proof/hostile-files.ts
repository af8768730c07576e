/**
 * Files made to hurt a document pipeline, as an attacker holding an ordinary token would upload them (issue 22):
 * catastrophic regex backtracking, inflation bombs in DOCX and PDF, page trees that repeat one page, nesting deep
 * enough to overflow a recursive parser, XML entity tricks. Each is generated here, small on the wire, so the tests
 * and `bench` can make them anywhere. The sizes are parameters: the proof suite runs them at the issue's sizes.
 */
import { Readable } from 'node:stream';
import { createDeflate } from 'node:zlib';
import { ZipFile } from 'yazl';
import { buildZip } from '../helpers/zip-archives';

export interface HostileFile {
  /** Short name for the figures. */
  readonly name: string;
  readonly fileName: string;
  readonly bytes: Buffer;
  /** What the file does, for the figures and the closing note. */
  readonly what: string;
}

/** `<!---->` × n + `x`: the old `looksLikeHtml` regex backtracked 2^(n-1) steps on it (n = 40: 281 bytes, hours). */
export function regexHtmlBomb(repeats = 40): HostileFile {
  const bytes = Buffer.from(`${'<!---->'.repeat(repeats)}x`);
  return {
    name: 'regex-html',
    fileName: 'notes.txt',
    bytes,
    what: `${bytes.length} bytes of empty HTML comments (backtracking regex)`,
  };
}

/** `<div>` nested `depth` deep: a recursive HTML walker overflows the call stack (RangeError). */
export function deeplyNestedHtml(depth = 100_000): HostileFile {
  const bytes = Buffer.from(`<!doctype html><html><body>${'<div>'.repeat(depth)}deep${'</div>'.repeat(depth)}`);
  return { name: 'nested-html', fileName: 'deep.html', bytes, what: `HTML nested ${depth} elements deep` };
}

const DOCX_CONTENT_TYPES =
  '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>' +
  '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">' +
  '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>' +
  '<Default Extension="xml" ContentType="application/xml"/>' +
  '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>' +
  '</Types>';
const DOCX_RELS =
  '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>' +
  '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">' +
  '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/>' +
  '</Relationships>';
const W_NS = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"';

/** A DOCX whose `word/document.xml` is `head` + `unit` × `repeats` + `tail`, deflated (repetitive XML shrinks ~1000×). */
function docxWithBody(head: string, unit: string, repeats: number, tail: string): Promise<Buffer> {
  const zip = new ZipFile();
  zip.addBuffer(Buffer.from(DOCX_CONTENT_TYPES), '[Content_Types].xml');
  zip.addBuffer(Buffer.from(DOCX_RELS), '_rels/.rels');
  // A stream, so a 95 MiB document is never one buffer here: yazl deflates it as it is read.
  const perBlock = repeats > 0 ? Math.max(1, Math.floor((64 * 1024) / unit.length)) : 0;
  const block = unit.repeat(perBlock);
  let left = repeats;
  let started = false;
  const body = new Readable({
    read() {
      if (!started) {
        started = true;
        this.push(head);
        return;
      }
      if (left <= 0) {
        this.push(tail);
        this.push(null);
        return;
      }
      const count = Math.min(left, perBlock);
      this.push(count === perBlock ? block : unit.repeat(count));
      left -= count;
    },
  });
  zip.addReadStream(body, 'word/document.xml');
  zip.end();
  return streamToBuffer(zip.outputStream);
}

function streamToBuffer(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const parts: Buffer[] = [];
  return new Promise((resolve, reject) => {
    stream.on('data', (part: Buffer) => parts.push(part));
    stream.on('end', () => resolve(Buffer.concat(parts)));
    stream.on('error', reject);
  });
}

const PARAGRAPH = '<w:p><w:r><w:t>Lorem ipsum dolor sit amet.</w:t></w:r></w:p>';

/** A DOCX whose document.xml inflates to `mebibytes` MiB of paragraphs (95 MiB: under the old 100 MiB declared cap). */
export async function docxInflationBomb(mebibytes = 95): Promise<HostileFile> {
  const head = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document ${W_NS}><w:body>`;
  const tail = '</w:body></w:document>';
  const repeats = Math.floor((mebibytes * 1024 * 1024 - head.length - tail.length) / PARAGRAPH.length);
  const bytes = await docxWithBody(head, PARAGRAPH, repeats, tail);
  return {
    name: `docx-bomb-${mebibytes}MiB`,
    fileName: 'report.docx',
    bytes,
    what: `DOCX of ${bytes.length} bytes whose document.xml inflates to ${mebibytes} MiB`,
  };
}

/**
 * The same bomb with its sizes lied about: every size field of document.xml says 1 KiB, so a reader that trusts
 * the declared sizes (the old cap did) waves it through; only counting while inflating sees the truth.
 */
export async function docxLyingSizes(mebibytes = 95): Promise<HostileFile> {
  const bomb = await docxInflationBomb(mebibytes);
  const bytes = Buffer.from(bomb.bytes);
  patchZipSizes(bytes, 'word/document.xml', 1024);
  return {
    name: `docx-lying-${mebibytes}MiB`,
    fileName: 'report.docx',
    bytes,
    what: `DOCX declaring 1 KiB for a document.xml that inflates to ${mebibytes} MiB`,
  };
}

/** Overwrites the uncompressed size of `entryName` in its local header and central directory record. */
function patchZipSizes(zip: Buffer, entryName: string, size: number): void {
  const name = Buffer.from(entryName);
  for (let at = zip.indexOf(name); at !== -1; at = zip.indexOf(name, at + 1)) {
    // Local file header: signature at name - 30, uncompressed size at +22. Central record: name - 46, size at +24.
    if (zip.readUInt32LE(at - 30) === 0x04034b50) {
      if (zip.readUInt32LE(at - 30 + 22) !== 0) zip.writeUInt32LE(size, at - 30 + 22);
    } else if (zip.readUInt32LE(at - 46) === 0x02014b50) {
      zip.writeUInt32LE(size, at - 46 + 24);
    }
  }
  // yazl streams entries with a data descriptor (sizes after the data): patch that too.
  for (let at = zip.indexOf(Buffer.from([0x50, 0x4b, 0x07, 0x08])); at !== -1; ) {
    const next = zip.indexOf(Buffer.from([0x50, 0x4b, 0x07, 0x08]), at + 4);
    if (zip.readUInt32LE(at + 12) > size) zip.writeUInt32LE(size, at + 12);
    at = next;
  }
}

/** Billion laughs: ten levels of entities that each repeat the one below ten times. */
export async function docxBillionLaughs(): Promise<HostileFile> {
  const entities = Array.from({ length: 10 }, (_, level) =>
    level === 0 ? '<!ENTITY lol0 "lol">' : `<!ENTITY lol${level} "${`&lol${level - 1};`.repeat(10)}">`,
  ).join('');
  const head = `<?xml version="1.0"?><!DOCTYPE w:document [${entities}]><w:document ${W_NS}><w:body><w:p><w:r><w:t>&lol9;`;
  const bytes = await docxWithBody(head, '', 0, '</w:t></w:r></w:p></w:body></w:document>');
  return { name: 'docx-billion-laughs', fileName: 'laughs.docx', bytes, what: 'DOCX with 10^9 nested XML entities' };
}

/** An external entity that names a file of the server. */
export async function docxExternalEntity(): Promise<HostileFile> {
  const head = `<?xml version="1.0"?><!DOCTYPE w:document [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><w:document ${W_NS}><w:body><w:p><w:r><w:t>before &xxe; after`;
  const bytes = await docxWithBody(head, '', 0, '</w:t></w:r></w:p></w:body></w:document>');
  return { name: 'docx-external-entity', fileName: 'xxe.docx', bytes, what: 'DOCX with an external XML entity' };
}

/** Paragraph elements nested `depth` deep in document.xml. */
export async function docxDeeplyNested(depth = 100_000): Promise<HostileFile> {
  const head = `<?xml version="1.0"?><w:document ${W_NS}><w:body>`;
  const body = `${'<w:sdt><w:sdtContent>'.repeat(depth)}<w:p><w:r><w:t>deep</w:t></w:r></w:p>${'</w:sdtContent></w:sdt>'.repeat(depth)}`;
  const bytes = await docxWithBody(head + body, '', 0, '</w:body></w:document>');
  return { name: 'docx-nested', fileName: 'nested.docx', bytes, what: `DOCX with elements nested ${depth} deep` };
}

/** A PDF of `objects` (1-based, in order) with a correct cross-reference table. */
function pdfOf(objects: readonly (string | Buffer)[], rootObject = 1): Buffer {
  const parts: Buffer[] = [Buffer.from('%PDF-1.7\n%\xe2\xe3\xcf\xd3\n', 'latin1')];
  let length = parts[0].length;
  const offsets: number[] = [];
  objects.forEach((body, index) => {
    offsets.push(length);
    const object = Buffer.concat([
      Buffer.from(`${index + 1} 0 obj\n`),
      typeof body === 'string' ? Buffer.from(body, 'latin1') : body,
      Buffer.from('\nendobj\n'),
    ]);
    parts.push(object);
    length += object.length;
  });
  const xref = [
    'xref',
    `0 ${objects.length + 1}`,
    '0000000000 65535 f ',
    ...offsets.map((offset) => `${String(offset).padStart(10, '0')} 00000 n `),
    'trailer',
    `<< /Size ${objects.length + 1} /Root ${rootObject} 0 R >>`,
    'startxref',
    String(length),
    '%%EOF',
  ].join('\n');
  parts.push(Buffer.from(`${xref}\n`));
  return Buffer.concat(parts);
}

function streamObject(dictionary: string, data: Buffer): Buffer {
  return Buffer.concat([
    Buffer.from(`<< ${dictionary} /Length ${data.length} >>\nstream\n`),
    data,
    Buffer.from('\nendstream'),
  ]);
}

const FONT = '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>';

/** One page listed `pages` times in the page tree (200,000: 1.2 MB that a reader walks page by page). */
export function pdfRepeatedPage(pages = 200_000): HostileFile {
  const content = Buffer.from('BT /F1 12 Tf 72 700 Td (The same page again.) Tj ET');
  const bytes = pdfOf([
    '<< /Type /Catalog /Pages 2 0 R >>',
    `<< /Type /Pages /Count ${pages} /Kids [${'3 0 R '.repeat(pages)}] >>`,
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>',
    streamObject('', content),
    FONT,
  ]);
  return {
    name: 'pdf-repeated-page',
    fileName: 'pages.pdf',
    bytes,
    what: `PDF of ${bytes.length} bytes listing one page ${pages} times`,
  };
}

/** A one-page PDF whose content stream inflates to `mebibytes` MiB of text-showing operators. */
export async function pdfInflationBomb(mebibytes = 350): Promise<HostileFile> {
  const unit = Buffer.from('(bomb) Tj\n');
  const block = Buffer.alloc(1024 * 1024 - ((1024 * 1024) % unit.length));
  for (let at = 0; at < block.length; at += unit.length) unit.copy(block, at);
  const blocks = Math.ceil((mebibytes * 1024 * 1024) / block.length);
  // Deflated block by block, so the test never holds the inflated stream.
  const operators = Readable.from(
    (function* () {
      yield Buffer.from('BT /F1 12 Tf 72 700 Td\n');
      for (let i = 0; i < blocks; i++) yield block;
      yield Buffer.from('ET');
    })(),
  );
  const data = await streamToBuffer(operators.pipe(createDeflate({ level: 9 })));
  const bytes = pdfOf([
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Count 1 /Kids [3 0 R] >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>',
    streamObject('/Filter /FlateDecode', data),
    FONT,
  ]);
  return {
    name: `pdf-bomb-${mebibytes}MiB`,
    fileName: 'bomb.pdf',
    bytes,
    what: `PDF of ${bytes.length} bytes whose content stream inflates to ${mebibytes} MiB`,
  };
}

/** A ZIP archive (a batch import) of `entries` files of exactly `entryBytes` bytes each, all one letter. */
export async function zipOfManySmallBombs(entries = 499, entryBytes = 1024 * 1024): Promise<HostileFile> {
  const content = Buffer.alloc(entryBytes, 0x61);
  const bytes = await buildZip(
    Array.from({ length: entries }, (_, i) => ({ name: `file-${String(i).padStart(4, '0')}.txt`, data: content })),
  );
  return {
    name: 'zip-many-entries',
    fileName: 'batch.zip',
    bytes,
    what: `ZIP of ${bytes.length} bytes: ${entries} entries of ${entryBytes} bytes each`,
  };
}
