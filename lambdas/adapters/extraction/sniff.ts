/**
 * What the bytes of an uploaded file are, judged by their content before their name: a PDF, a ZIP container
 * (a DOCX is one), a binary file, or text (then decoded: UTF-8, UTF-16 with a BOM, or a legacy 8-bit encoding).
 */

export type Sniffed =
  | { readonly kind: 'pdf' }
  | { readonly kind: 'zip' }
  | { readonly kind: 'binary'; readonly description: string }
  | { readonly kind: 'text'; readonly text: string };

/** Signatures of common binary files, named only so the error message says what was uploaded. */
const BINARY_SIGNATURES: readonly { readonly bytes: readonly number[]; readonly description: string }[] = [
  { bytes: [0x89, 0x50, 0x4e, 0x47], description: 'a PNG image' },
  { bytes: [0xff, 0xd8, 0xff], description: 'a JPEG image' },
  { bytes: [0x47, 0x49, 0x46, 0x38], description: 'a GIF image' },
  { bytes: [0x1f, 0x8b], description: 'a gzip archive' },
  { bytes: [0x52, 0x61, 0x72, 0x21], description: 'a RAR archive' },
  { bytes: [0x37, 0x7a, 0xbc, 0xaf], description: 'a 7z archive' },
  {
    bytes: [0xd0, 0xcf, 0x11, 0xe0],
    description: 'a legacy Office file (.doc, .xls, .ppt) or an encrypted Office file',
  },
];

/** Above this share of undecodable UTF-8 sequences, bytes are binary: text has none or a few stray bytes. */
const MAX_INVALID_RATIO = 0.1;
/** Above this share of control characters, text is binary: text has none, random bytes one in eight. */
const MAX_CONTROL_RATIO = 0.01;

export function sniff(bytes: Buffer): Sniffed {
  const signed = bySignature(bytes);
  if (signed) return signed;
  const text = decode(bytes);
  if (text === undefined || looksBinary(text)) return { kind: 'binary', description: 'a binary file' };
  return { kind: 'text', text };
}

/** What the first bytes of a file say it is (PDF, ZIP, a known binary format), or undefined: then it may be text. */
export function bySignature(bytes: Uint8Array): Exclude<Sniffed, { kind: 'text' }> | undefined {
  if (startsWith(bytes, [0x25, 0x50, 0x44, 0x46, 0x2d])) return { kind: 'pdf' }; // %PDF-
  // A local file header, or the end-of-central-directory record of an empty archive.
  if (startsWith(bytes, [0x50, 0x4b, 0x03, 0x04]) || startsWith(bytes, [0x50, 0x4b, 0x05, 0x06])) {
    return { kind: 'zip' };
  }
  const signature = BINARY_SIGNATURES.find((candidate) => startsWith(bytes, candidate.bytes));
  return signature && { kind: 'binary', description: signature.description };
}

/** Whether the bytes begin with a byte order mark (UTF-8, UTF-16 LE or BE), which decoding drops. */
export function startsWithBom(bytes: Uint8Array): boolean {
  return startsWith(bytes, [0xef, 0xbb, 0xbf]) || startsWith(bytes, [0xff, 0xfe]) || startsWith(bytes, [0xfe, 0xff]);
}

/** The text of text-like bytes, or undefined when they cannot be text. The BOM is dropped. */
function decode(bytes: Buffer): string | undefined {
  if (startsWith(bytes, [0xef, 0xbb, 0xbf])) return decodeUtf8(bytes.subarray(3));
  if (startsWith(bytes, [0xff, 0xfe])) return new TextDecoder('utf-16le').decode(bytes.subarray(2));
  if (startsWith(bytes, [0xfe, 0xff])) return new TextDecoder('utf-16be').decode(bytes.subarray(2));
  // Text without a UTF-16 BOM never holds a NUL byte; binary files almost always do.
  if (bytes.includes(0)) return undefined;
  return decodeUtf8(bytes);
}

function decodeUtf8(bytes: Buffer): string | undefined {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    // Not valid UTF-8: a few stray bytes in UTF-8 text, a legacy 8-bit file, or binary.
  }
  const lenient = new TextDecoder('utf-8').decode(bytes);
  // No valid multi-byte sequence at all: the non-ASCII bytes are a legacy 8-bit encoding, most often Windows-1252
  // (random bytes decode too, then fail the control character check).
  const validNonAscii = count(lenient, (code) => code > 0x7f && code !== 0xfffd);
  if (validNonAscii === 0) return new TextDecoder('windows-1252').decode(bytes);
  const invalid = count(lenient, (code) => code === 0xfffd);
  if (invalid > lenient.length * MAX_INVALID_RATIO) return undefined;
  return lenient.replaceAll('\ufffd', '');
}

function looksBinary(text: string): boolean {
  return text.includes('\u0000') || tooManyControls(count(text, isControl), text.length);
}

/**
 * A control character that text does not hold. Tab, line feed, vertical tab, form feed, carriage return and escape
 * (ANSI colours in logs) occur in text; C1 controls (0x80–0x9f) are what undefined Windows-1252 bytes decode to.
 */
export function isControl(code: number): boolean {
  return (code < 0x20 && (code < 0x09 || code > 0x0d) && code !== 0x1b) || (code >= 0x7f && code <= 0x9f);
}

/** Whether `controls` control characters in a text of `length` UTF-16 code units make it binary. */
export function tooManyControls(controls: number, length: number): boolean {
  return controls > length * MAX_CONTROL_RATIO;
}

function count(text: string, predicate: (code: number) => boolean): number {
  let total = 0;
  for (let index = 0; index < text.length; index++) if (predicate(text.charCodeAt(index))) total++;
  return total;
}

function startsWith(bytes: Uint8Array, prefix: readonly number[]): boolean {
  return bytes.length >= prefix.length && prefix.every((byte, index) => bytes[index] === byte);
}
