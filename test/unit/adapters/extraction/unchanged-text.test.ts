/**
 * The extraction child answers a text file whose extracted text is exactly its bytes without decoding it
 * (`unchangedTextFormat`, issue 40: a 50 MB text no longer holds its 50-100 MB string in the child). Its decision must
 * be extraction's own: it says 'text' or 'markdown' exactly when `extract` succeeds with that format and a text whose
 * UTF-8 is the file (what the child's `sameAsFile` answer, decoded by the caller, stands for), and nothing otherwise.
 * (An HTML, CSV or JSON file whose text comes out as its bytes, `word` named page.html, is left to extraction: the
 * child still answers it sameAsFile after extracting.)
 */
import fc from 'fast-check';
import { IsolatedTextExtractor, isUtf8Of } from '#adapters/extraction/isolated-extractor';
import { sniff } from '#adapters/extraction/sniff';
import {
  DEFAULT_EXTRACTION_CAPS,
  DocumentTextExtractor,
  unchangedTextFormat,
} from '#adapters/extraction/text-extractor';
import { ProcessingError } from '#core/processing/errors';

type Hints = { fileName: string; contentType: string };
const TEXT: Hints = { fileName: 'notes.txt', contentType: 'text/plain' };
const MAX = DEFAULT_EXTRACTION_CAPS.maxCharacters;

/**
 * What the existing path gives: the format when it is text or Markdown and the text is the file's UTF-8 (the child's
 * sameAsFile), else undefined.
 */
async function slowDecision(bytes: Uint8Array, hints: Hints, maxCharacters: number): Promise<string | undefined> {
  // A PDF or a ZIP is never text or Markdown (and pdf.js does not load under jest).
  const kind = sniff(Buffer.from(bytes)).kind;
  if (kind === 'pdf' || kind === 'zip') return undefined;
  try {
    const { text, format } = await new DocumentTextExtractor({ maxCharacters }).extract(Buffer.from(bytes), hints);
    if (!isUtf8Of(text, bytes) || (format !== 'text' && format !== 'markdown')) return undefined;
    // What the caller does with a sameAsFile answer.
    expect(Buffer.from(bytes).toString('utf8')).toBe(text);
    return format;
  } catch (error) {
    if (error instanceof ProcessingError) return undefined;
    throw error;
  }
}

async function expectSameDecision(bytes: Uint8Array, hints: Hints = TEXT, maxCharacters = MAX) {
  const fast = unchangedTextFormat(bytes, hints, maxCharacters);
  const slow = await slowDecision(bytes, hints, maxCharacters);
  if (fast !== slow) {
    // The failing input, readable.
    expect({ bytes: Buffer.from(bytes).toString('hex'), hints, maxCharacters, fast }).toEqual({
      bytes: Buffer.from(bytes).toString('hex'),
      hints,
      maxCharacters,
      fast: slow,
    });
  }
  return fast;
}

const utf8 = (text: string) => Buffer.from(text, 'utf8');

/** Every code point whitespaceKind does not call text, and neighbours it does. */
const WHITESPACE = [
  ' ',
  '\t',
  '\n',
  '\r',
  '\r\n',
  '\n\r',
  '\v',
  '\f',
  '\u0000',
  '\u0001',
  '\u0008',
  '\u000e',
  '\u001b',
  '\u001f',
  '\u007f',
  '\u0085',
  '\u00a0',
  '\u1680',
  ...Array.from({ length: 11 }, (_, i) => String.fromCharCode(0x2000 + i)),
  '\u2028',
  '\u2029',
  '\u202f',
  '\u205f',
  '\u3000',
  '\ufeff',
];
const NOT_WHITESPACE = ['\u200b', '\u180e', '\u0080', '\u0084', '\u009f', '\u00a1', '\u2030', '\ufffd', '\uffff'];
const WORDS = ['word', 'Router', 'a', '.', '#', '-', 'é', 'ß', '中文', 'Ω', '😀', '𝄞', 'x😀y', '{', '}', '"'];
const NORMAL_RUNS = [' ', '\n', '\n\n'];
const INVALID = [[0x80], [0xff], [0xc3], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xe2, 0x80]];
const PREFIXES: Uint8Array[] = [
  [0xef, 0xbb, 0xbf],
  [0xff, 0xfe],
  [0xfe, 0xff],
  [0x89, 0x50, 0x4e, 0x47],
  [0x1f, 0x8b],
].map((bytes) => Uint8Array.from(bytes));
const TEXT_PREFIXES = [
  '%PDF-',
  'PK\u0003\u0004',
  'PK\u0005\u0006',
  'GIF8',
  'Rar!',
  '<!doctype html>',
  '<!DOCTYPE HTML>\n',
  '<html>',
  '<html lang="en">',
  '<!-- note -->\n<html>',
  '<!-- note --><!-- -->\n\n<HTML>',
  '<!-- never closed',
  '<htmlx>',
  '{"a": 1}',
  '[1, 2]',
  'a,b\n1,2',
  '# Title',
];
const FILE_NAMES = [
  'notes.txt',
  'guide.md',
  'guide.markdown',
  'NOTES.TEXT',
  'page.html',
  'page.htm',
  'table.csv',
  'data.json',
  'README',
  'scan.pdf',
  'notes.constructor',
  'notes.txt.json',
  '',
];
const CONTENT_TYPES = [
  'text/plain',
  'text/plain; charset=utf-8',
  'text/markdown',
  'text/html',
  'TEXT/HTML',
  'text/csv',
  'application/json',
  'application/json; charset=utf-8',
  'application/octet-stream',
  '',
];

/**
 * Text close to what extraction leaves alone (words joined by normal runs), with up to two odd pieces put anywhere:
 * any whitespace (a normal run at either end too), a character next to whitespace, an invalid byte.
 */
const odd = fc.oneof(
  fc.constantFrom(...WHITESPACE, ...NOT_WHITESPACE, ...NORMAL_RUNS).map(utf8),
  fc.constantFrom(...INVALID).map((bytes) => Uint8Array.from(bytes)),
);
const nearlyNormal = fc
  .tuple(
    fc.constantFrom(...WORDS),
    fc.array(fc.tuple(fc.constantFrom(...NORMAL_RUNS), fc.constantFrom(...WORDS)), { maxLength: 20 }),
    fc.array(fc.tuple(fc.nat(), odd), { maxLength: 2 }),
  )
  .map(([first, rest, odds]) => {
    const pieces: Uint8Array[] = [utf8(first), ...rest.flatMap(([run, word]) => [utf8(run), utf8(word)])];
    for (const [at, piece] of odds) pieces.splice(at % (pieces.length + 1), 0, piece);
    return Buffer.concat(pieces);
  });

/** Anything: each piece equally likely, so runs of every kind and invalid bytes are common. */
const anything = fc
  .array(
    fc.oneof(
      fc.constantFrom(...WORDS, ...NORMAL_RUNS, ...WHITESPACE, ...NOT_WHITESPACE).map(utf8),
      fc.constantFrom(...INVALID).map((bytes) => Uint8Array.from(bytes)),
    ),
    { maxLength: 20 },
  )
  .map((pieces) => Buffer.concat(pieces));

const prefix = fc.oneof(
  { weight: 8, arbitrary: fc.constant(new Uint8Array(0)) },
  { weight: 1, arbitrary: fc.constantFrom(...PREFIXES) },
  { weight: 2, arbitrary: fc.constantFrom(...TEXT_PREFIXES).map(utf8) },
);

const file = fc.record({
  bytes: fc
    .tuple(prefix, fc.oneof({ weight: 3, arbitrary: nearlyNormal }, { weight: 1, arbitrary: anything }))
    .map(([head, body]) => Buffer.concat([head, body])),
  hints: fc.oneof(
    { weight: 4, arbitrary: fc.constant(TEXT) },
    {
      weight: 2,
      arbitrary: fc.record({
        fileName: fc.constantFrom(...FILE_NAMES),
        contentType: fc.constantFrom(...CONTENT_TYPES),
      }),
    },
  ),
  // Around the length of these short texts, so the cap falls on either side of it (astral characters count two).
  maxCharacters: fc.oneof({ weight: 4, arbitrary: fc.constant(MAX) }, { weight: 1, arbitrary: fc.nat(60) }),
});

describe('unchangedTextFormat', () => {
  it('decides as extraction does on 12,000 random files (either way, both ways counted)', async () => {
    const decided = { same: 0, extracted: 0 };
    await fc.assert(
      fc.asyncProperty(file, async ({ bytes, hints, maxCharacters }) => {
        const fast = await expectSameDecision(bytes, hints, maxCharacters);
        decided[fast === undefined ? 'extracted' : 'same']++;
      }),
      { numRuns: 12_000, seed: 40 },
    );
    // Both outcomes are exercised well, so the comparison above can fail either way.
    expect(decided.same).toBeGreaterThan(1500);
    expect(decided.extracted).toBeGreaterThan(1500);
  });

  it('takes exactly one space, one line feed or two as a run, and nothing at either end', async () => {
    for (const run of [
      ...WHITESPACE.filter((run) => run !== ' ' && run !== '\n'),
      '  ',
      ' \n',
      '\n ',
      '\n\n\n',
      '\n \n',
      '\u00a0 ',
    ]) {
      expect(await expectSameDecision(utf8(`a${run}b`))).toBeUndefined();
      expect(await expectSameDecision(utf8(`${run}ab`))).toBeUndefined();
      expect(await expectSameDecision(utf8(`ab${run}`))).toBeUndefined();
    }
    for (const run of NORMAL_RUNS) {
      expect(await expectSameDecision(utf8(`a${run}b`))).toBe('text');
      expect(await expectSameDecision(utf8(`${run}ab`))).toBeUndefined();
      expect(await expectSameDecision(utf8(`ab${run}`))).toBeUndefined();
    }
    for (const plain of NOT_WHITESPACE) {
      // Padded: C1 controls count against the control share.
      expect(await expectSameDecision(utf8(`${'a'.repeat(200)} ${plain} b`))).toBe('text');
    }
    expect(await expectSameDecision(utf8(''))).toBeUndefined();
    expect(await expectSameDecision(utf8('x'))).toBe('text');
    expect(await expectSameDecision(utf8('\ufeffab'))).toBeUndefined();
    expect(await expectSameDecision(utf8('# Title\n\nSome *text*.'), { fileName: 'a.md', contentType: '' })).toBe(
      'markdown',
    );
  });

  it('counts UTF-16 code units against the character cap and the control-character share', async () => {
    const twoAstral = utf8('😀😀');
    expect(await expectSameDecision(twoAstral, TEXT, 4)).toBe('text');
    expect(await expectSameDecision(twoAstral, TEXT, 3)).toBeUndefined();
    expect(await expectSameDecision(utf8('é'.repeat(10)), TEXT, 10)).toBe('text');
    expect(await expectSameDecision(utf8('é'.repeat(10)), TEXT, 9)).toBeUndefined();
    // One C1 control per 100 code units is text, two is binary.
    expect(await expectSameDecision(utf8(`${'a'.repeat(99)}\u0080`))).toBe('text');
    expect(await expectSameDecision(utf8(`${'a'.repeat(98)}\u0080\u0080`))).toBeUndefined();
    // 2 controls in 200 code units (101 code points): text, since sniff counts code units.
    expect(await expectSameDecision(utf8(`\u0080\u0080${'😀'.repeat(99)}`))).toBe('text');
    expect(await expectSameDecision(utf8(`\u0080\u0080\u0080${'😀'.repeat(99)}`))).toBeUndefined();
  });

  it('reads only the head an HTML check reads, a multi-byte character cut at its end included', async () => {
    // `<html>` within the first 4,096 code units after 3-byte characters: HTML.
    expect(await expectSameDecision(utf8(`<!--${'中'.repeat(4000)}--><html>body`))).toBeUndefined();
    // `<html>` cut by the end of the head (it starts at code unit 4,092): text.
    expect(await expectSameDecision(utf8(`<!--${'中'.repeat(4085)}--><html>body`))).toBe('text');
    // A comment that the head does not close, then html: text.
    expect(await expectSameDecision(utf8(`<!--${'中'.repeat(5000)}--><html>body`))).toBe('text');
    for (let extra = 0; extra < 6; extra++) {
      const astral = `<!--${'😀'.repeat(2040)}${'é'.repeat(extra)}--><html>x`;
      await expectSameDecision(utf8(astral));
      const wide = `<!--${'中'.repeat(4090 + extra)}--><html>x`;
      await expectSameDecision(utf8(wide));
    }
    expect(await expectSameDecision(utf8('  <html>x'))).toBeUndefined();
    expect(await expectSameDecision(utf8('<!doctype html><p>x</p>'), TEXT)).toBeUndefined();
  });

  it('agrees on a 4 MB text with every kind of character, and on the same text with one tab at its end', async () => {
    const line = 'The pump café 東京 runs at 😀 speed,\u00a1 see §4.\nNext line\n\nNew paragraph ';
    const text = `${line.repeat(50_000)}end.`;
    expect(await expectSameDecision(utf8(text))).toBe('text');
    expect(await expectSameDecision(utf8(`${text.slice(0, -2)}\td.`))).toBeUndefined();
  });

  it('decides on 20 MB in one pass, hostile content included, in bounded time', () => {
    const heads = [utf8('<!--'.repeat(5_000_000)), utf8(`${'a\n\n'.repeat(6_000_000)}a`)];
    for (const bytes of heads) {
      const started = performance.now();
      unchangedTextFormat(bytes, TEXT, MAX);
      // A linear pass takes well under a second here; a backtracking one would take hours.
      expect(performance.now() - started).toBeLessThan(5_000);
    }
  });
});

describe('the extraction child answers from the bytes what extraction on this thread gives', () => {
  const isolated = new IsolatedTextExtractor({
    ...DEFAULT_EXTRACTION_CAPS,
    timeoutMs: 30_000,
    memoryBytes: 768 * 1024 * 1024,
  });
  afterAll(() => isolated.close());

  it('for files it answers without decoding, and for files it extracts', async () => {
    const direct = new DocumentTextExtractor();
    const files: [string, Hints][] = [
      ['Grüße aus Köln, 東京 and 😀\n\nNext paragraph.', TEXT],
      ['# Heading\n\nA list:\n- one\n- two', { fileName: 'guide.md', contentType: 'text/markdown' }],
      ['No\u00a0break space', TEXT],
      ['{"a": 1}', { fileName: 'data.json', contentType: 'application/json' }],
      ['<!doctype html><p>Paragraph</p>', TEXT],
    ];
    for (const [text, hints] of files) {
      const bytes = utf8(text);
      const expected = await direct.extract(bytes, hints);
      expect(await isolated.extract(bytes, hints)).toEqual(expected);
    }
    expect(unchangedTextFormat(utf8(files[1][0]), files[1][1], MAX)).toBe('markdown');
  });
});
