/**
 * The text of an uploaded file, for chunking. The bytes decide first (PDF and ZIP signatures, binary content),
 * the name and content type only among text formats; see docs/processing.md, "Extraction and chunking".
 */

import { isUtf8 } from 'node:buffer';
import { ProcessingError } from '#core/processing/errors';
import type { ExtractedText, TextExtractor } from '#ports/processing';
import { docxToText, MAX_DOCX_XML_BYTES, readZipContainer } from './docx';
import { HTML_HEAD_CHARACTERS, htmlToText, looksLikeHtml } from './html';
import { MAX_PDF_PAGES, pdfToText } from './pdf';
import { bySignature, isControl, sniff, startsWithBom, tooManyControls } from './sniff';
import { csvToText, jsonToText } from './structured';

export type ExtractedFormat = 'text' | 'markdown' | 'html' | 'csv' | 'json' | 'pdf' | 'docx';
type TextFormat = Exclude<ExtractedFormat, 'pdf' | 'docx'>;

// Maps, not object literals: a name like `notes.constructor` must not find a prototype property.
const TEXT_FORMAT_BY_EXTENSION = new Map<string, TextFormat>([
  ['txt', 'text'],
  ['text', 'text'],
  ['md', 'markdown'],
  ['markdown', 'markdown'],
  ['htm', 'html'],
  ['html', 'html'],
  ['csv', 'csv'],
  ['json', 'json'],
]);

const TEXT_FORMAT_BY_CONTENT_TYPE = new Map<string, TextFormat>([
  ['text/plain', 'text'],
  ['text/markdown', 'markdown'],
  ['text/html', 'html'],
  ['text/csv', 'csv'],
  ['application/json', 'json'],
]);

const UNSUPPORTED_CONTAINERS = {
  xlsx: 'an Excel workbook (.xlsx); spreadsheets are not extracted, export the sheet as CSV',
  pptx: 'a PowerPoint presentation (.pptx)',
  other: 'a ZIP archive, not a DOCX document; archives are imported with a file name ending in .zip',
} as const;

/** What one file may expand to while its text is extracted; past any of them it ends `FILE_TOO_LARGE`. */
export interface ExtractionCaps {
  readonly maxPdfPages: number;
  /** XML a DOCX may unpack to, counted while inflating. */
  readonly maxDocxXmlBytes: number;
  /** Characters of extracted text (50 million: a 50 MB plain-text file still fits). */
  readonly maxCharacters: number;
}

export const DEFAULT_EXTRACTION_CAPS: ExtractionCaps = {
  maxPdfPages: MAX_PDF_PAGES,
  maxDocxXmlBytes: MAX_DOCX_XML_BYTES,
  maxCharacters: 50_000_000,
};

/**
 * Extraction on the calling thread. The service runs it only inside the extraction child process
 * (`isolated-extractor.ts`), which bounds its time and memory; tests and benchmarks call it directly.
 */
export class DocumentTextExtractor implements TextExtractor {
  private readonly caps: ExtractionCaps;

  /**
   * `handOverInput`: the caller gives up the bytes it passes (the extraction child, which read them into a buffer of
   * their own): pdf.js is then handed their memory instead of a copy, a DOCX's are freed once its XML parts are read,
   * and the caller's Buffer is empty afterwards.
   */
  constructor(
    caps: Partial<ExtractionCaps> = {},
    private readonly options: { readonly handOverInput?: boolean } = {},
  ) {
    this.caps = { ...DEFAULT_EXTRACTION_CAPS, ...caps };
  }

  async extract(bytes: Buffer, hints: { fileName: string; contentType: string }): Promise<ExtractedText> {
    const sniffed = sniff(bytes);
    switch (sniffed.kind) {
      case 'pdf': {
        const text = await pdfToText(bytes, {
          maxPages: this.caps.maxPdfPages,
          maxCharacters: this.caps.maxCharacters,
          handOver: this.options.handOverInput === true,
        });
        return this.result('pdf', text, 'The PDF has no text layer (a scanned PDF is not read by OCR).');
      }
      case 'zip': {
        const { kind, parts } = await readZipContainer(bytes, this.caps.maxDocxXmlBytes);
        if (kind !== 'docx') {
          throw new ProcessingError('UNSUPPORTED_TYPE', `The file is ${UNSUPPORTED_CONTAINERS[kind]}.`);
        }
        // Its XML parts are all mammoth reads: the file's memory goes before mammoth's parse needs its own.
        if (this.options.handOverInput) release(bytes);
        return this.result('docx', await docxToText(parts), 'The DOCX document has no text.');
      }
      case 'binary':
        throw new ProcessingError('UNSUPPORTED_TYPE', `The file is ${sniffed.description}, not a supported document.`);
      case 'text':
        this.checkLength(sniffed.text.length);
        return this.extractText(sniffed.text, textFormatOf(sniffed.text, hints));
    }
  }

  /**
   * `'text'` or `'markdown'` when `extract` would give exactly the bytes read as UTF-8 in that format, decided from
   * the bytes without decoding them (see unchangedTextFormat); undefined when that is not so, or not known, and
   * `extract` must run. The extraction child answers such a file without building its text.
   */
  unchangedTextFormat(
    bytes: Uint8Array,
    hints: { fileName: string; contentType: string },
  ): 'text' | 'markdown' | undefined {
    return unchangedTextFormat(bytes, hints, this.caps.maxCharacters);
  }

  private extractText(text: string, format: TextFormat): ExtractedText {
    // Checked before parsing, so that an empty .json or .csv file is empty rather than malformed.
    if (text.trim() === '') throw new ProcessingError('EMPTY_DOCUMENT', 'The file is empty.');
    switch (format) {
      case 'html':
        return this.result(format, htmlToText(text), 'The HTML page has no text.');
      case 'csv':
        return this.result(format, csvToText(text), 'The CSV file has a header but no values.');
      case 'json':
        return this.result(format, jsonToText(text), 'The JSON file has no values.');
      case 'markdown':
      case 'text':
        return this.result(format, text, 'The file has no text.');
    }
  }

  private result(format: ExtractedFormat, raw: string, emptyMessage: string): ExtractedText {
    this.checkLength(raw.length);
    const text = normalizeWhitespace(raw);
    if (text === '') throw new ProcessingError('EMPTY_DOCUMENT', emptyMessage);
    return { text, format };
  }

  private checkLength(characters: number): void {
    if (characters > this.caps.maxCharacters) {
      throw new ProcessingError(
        'FILE_TOO_LARGE',
        `The file's text has ${characters} characters; the limit is ${this.caps.maxCharacters}.`,
      );
    }
  }
}

/** HTML is recognized by its content under any name; the other text formats by name, then by content type. */
function textFormatOf(text: string, hints: { fileName: string; contentType: string }): TextFormat {
  return looksLikeHtml(text) ? 'html' : namedTextFormat(hints);
}

function namedTextFormat(hints: { fileName: string; contentType: string }): TextFormat {
  const dot = hints.fileName.lastIndexOf('.');
  const extension = dot === -1 ? '' : hints.fileName.slice(dot + 1).toLowerCase();
  const mediaType = hints.contentType.split(';')[0].trim().toLowerCase();
  return TEXT_FORMAT_BY_EXTENSION.get(extension) ?? TEXT_FORMAT_BY_CONTENT_TYPE.get(mediaType) ?? 'text';
}

/** What a character is to normalizeWhitespace: text, or whitespace of some kind. */
const PLAIN = 0;
const SPACE = 1;
const NEWLINE = 2;
const PARAGRAPH = 3;
const RETURN = 4;

function whitespaceKind(code: number): number {
  if (code > 0x20 && code < 0x7f) return PLAIN;
  if (code === 0x0a || code === 0x0b || code === 0x85 || code === 0x2028) return NEWLINE;
  if (code === 0x0d) return RETURN;
  if (code === 0x0c || code === 0x2029) return PARAGRAPH;
  // Control characters, and what JavaScript's \s calls whitespace besides line breaks.
  if (
    code <= 0x20 ||
    code === 0x7f ||
    code === 0xa0 ||
    code === 0x1680 ||
    (code >= 0x2000 && code <= 0x200a) ||
    code === 0x202f ||
    code === 0x205f ||
    code === 0x3000 ||
    code === 0xfeff
  ) {
    return SPACE;
  }
  return PLAIN;
}

const JOIN_EVERY = 1 << 16;

/**
 * One space for any run of spaces and tabs, no space at either end of a line, at most one blank line in a row
 * (a paragraph break), line breaks kept (CR LF, CR, VT, NEL and LS are one each). Control characters are spaces; a
 * form feed or PS is a paragraph break. Nothing at either end.
 *
 * Each run of whitespace becomes `\n\n`, `\n` or one space by how many line breaks it holds. One pass over the
 * characters; the text between the runs that change is taken by slices, so text whose runs are already a space or
 * line breaks costs no copy until the result is joined. (Chained `replace` calls made a copy of the text each, and a
 * regular expression matching every space of a 50 MB text held about 800 MB while it built its result.)
 */
export function normalizeWhitespace(text: string): string {
  /** Joined runs of `parts`, so that a text whose every run changes holds no more than JOIN_EVERY small strings. */
  const pieces: string[] = [];
  let parts: string[] = [];
  const end = text.length;
  /** Start of the text not yet in `parts`, from which the runs met so far were kept as they are; -1 before any text. */
  let copyStart = -1;
  /** Start of the current run of whitespace, -1 within text. */
  let runStart = -1;
  let breaks = 0;
  for (let i = 0; i < end; i++) {
    const kind = whitespaceKind(text.charCodeAt(i));
    if (kind === PLAIN) {
      if (runStart >= 0) {
        if (copyStart < 0) copyStart = i;
        else if (!runIsNormal(text, runStart, i, breaks)) {
          parts.push(text.slice(copyStart, runStart), breaks === 0 ? ' ' : breaks === 1 ? '\n' : '\n\n');
          copyStart = i;
          if (parts.length >= JOIN_EVERY) {
            pieces.push(parts.join(''));
            parts = [];
          }
        }
        runStart = -1;
        breaks = 0;
      } else if (copyStart < 0) copyStart = i;
      continue;
    }
    if (runStart < 0) runStart = i;
    if (kind === NEWLINE) breaks++;
    else if (kind === PARAGRAPH) breaks += 2;
    else if (kind === RETURN) {
      breaks++;
      if (text.charCodeAt(i + 1) === 0x0a) i++;
    }
  }
  if (copyStart >= 0) parts.push(text.slice(copyStart, runStart >= 0 ? runStart : end));
  if (pieces.length === 0) return parts.length === 1 ? parts[0] : parts.join('');
  pieces.push(parts.join(''));
  return pieces.join('');
}

/** Whether the run `text[start, end)` with `breaks` line breaks already is what it becomes. */
function runIsNormal(text: string, start: number, end: number, breaks: number): boolean {
  const first = text.charCodeAt(start);
  if (end - start === 1) return (breaks === 0 && first === 0x20) || (breaks === 1 && first === 0x0a);
  return end - start === 2 && breaks === 2 && first === 0x0a && text.charCodeAt(start + 1) === 0x0a;
}

/** Where unchangedTextFormat's scan is: before any character, after text, after a space, one or two line feeds. */
const AT_START = 0;
const AFTER_TEXT = 1;
const AFTER_SPACE = 2;
const AFTER_LINE_FEED = 3;
const AFTER_BLANK_LINE = 4;

/**
 * Whether `extract` (on the text path) would give exactly these bytes read as UTF-8, and in which format, decided from
 * the bytes alone in one pass: no string of the whole text is made. All of sniff's and extract's rules must hold:
 * no PDF, ZIP or binary signature and no byte order mark (decoding drops it); valid UTF-8 (so no legacy 8-bit or
 * repaired decoding); control characters within sniff's share; named text or Markdown (not HTML, CSV or JSON) and not
 * HTML by its first characters, the only ones decoded; at most `maxCharacters` UTF-16 code units; and text that
 * normalizeWhitespace returns as it is: text at both ends (so not empty or blank), and every run of whitespace (of
 * whitespaceKind's, multi-byte ones included) exactly one space, one line feed or two. Undefined otherwise: then
 * extraction runs as usual, and its text may or may not be the file's.
 */
export function unchangedTextFormat(
  bytes: Uint8Array,
  hints: { fileName: string; contentType: string },
  maxCharacters: number,
): 'text' | 'markdown' | undefined {
  const format = namedTextFormat(hints);
  if (format !== 'text' && format !== 'markdown') return undefined;
  if (bySignature(bytes) !== undefined || startsWithBom(bytes) || !isUtf8(bytes)) return undefined;
  let characters = 0;
  let controls = 0;
  let state = AT_START;
  const end = bytes.length;
  for (let i = 0; i < end; ) {
    const byte = bytes[i];
    if (byte > 0x20 && byte < 0x7f) {
      // Printable ASCII, nearly every byte of most texts.
      characters++;
      state = AFTER_TEXT;
      i++;
      continue;
    }
    // isUtf8 has checked the sequences: a lead byte's length is the sequence's, and none is overlong or a surrogate.
    let code: number;
    if (byte < 0x80) {
      code = byte;
      i += 1;
    } else if (byte < 0xe0) {
      code = ((byte & 0x1f) << 6) | (bytes[i + 1] & 0x3f);
      i += 2;
    } else if (byte < 0xf0) {
      code = ((byte & 0x0f) << 12) | ((bytes[i + 1] & 0x3f) << 6) | (bytes[i + 2] & 0x3f);
      i += 3;
    } else {
      code =
        ((byte & 0x07) << 18) | ((bytes[i + 1] & 0x3f) << 12) | ((bytes[i + 2] & 0x3f) << 6) | (bytes[i + 3] & 0x3f);
      i += 4;
    }
    // Astral characters are two code units, each of which whitespaceKind calls text.
    characters += code > 0xffff ? 2 : 1;
    if (isControl(code)) controls++;
    if (whitespaceKind(code) === PLAIN) state = AFTER_TEXT;
    else if (code === 0x20 && state === AFTER_TEXT) state = AFTER_SPACE;
    else if (code === 0x0a && state === AFTER_TEXT) state = AFTER_LINE_FEED;
    else if (code === 0x0a && state === AFTER_LINE_FEED) state = AFTER_BLANK_LINE;
    else return undefined; // whitespace at the start, a run normalizeWhitespace rewrites
  }
  if (state !== AFTER_TEXT) return undefined; // empty, or whitespace at the end
  if (tooManyControls(controls, characters) || characters > maxCharacters) return undefined;
  // looksLikeHtml reads HTML_HEAD_CHARACTERS code units, which are at most 3 bytes each; a sequence cut at the end
  // of the slice is held back by the streaming decode, so what is decoded is a prefix of the text.
  const head = new TextDecoder('utf-8').decode(bytes.subarray(0, HTML_HEAD_CHARACTERS * 3 + 3), { stream: true });
  return looksLikeHtml(head) ? undefined : format;
}

/**
 * Frees the memory of bytes the caller handed over (they fill their ArrayBuffer): `transfer(0)` detaches it at once
 * (Node ≥ 21; on older Node the bytes stay until they are collected).
 */
function release(bytes: Buffer): void {
  const buffer = bytes.buffer as ArrayBuffer & { transfer?: (length: number) => ArrayBuffer };
  if (bytes.byteOffset === 0 && bytes.byteLength === buffer.byteLength) buffer.transfer?.(0);
}
