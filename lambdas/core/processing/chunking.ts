/**
 * Chunking of extracted text: pieces small enough to embed and to return as a search hit, cut where the text
 * itself breaks (a paragraph, then a sentence, then a line, then a word, a hard cut only inside an over-long
 * word), each starting with a little of the end of the previous one.
 *
 * This is the recursive splitter (paragraph → sentence → word → characters) done in one pass: every gap between
 * words is ranked by how strong a break it is, and a chunk ends at the strongest break in its upper half. It
 * yields the same cuts as splitting recursively and merging greedily, and lets the overlap start on a sentence.
 */
import { createHash } from 'node:crypto';

/**
 * Default chunk length, in UTF-16 code units (characters, for most text): about 200–250 tokens, within the
 * input of every embedding model (512 tokens for small BERT-style models) and the size at which BM25 retrieval
 * was measured at hit@5 0.99 (docs/processing.md).
 */
export const CHUNK_SIZE = 1000;
/** Default overlap, part of the chunk length: about one sentence, so a thought cut by a chunk end is whole in the next. */
export const CHUNK_OVERLAP = 150;

export interface ChunkOptions {
  /** Longest chunk, overlap included. */
  readonly size: number;
  /** Longest stretch of a chunk's end repeated at the start of the next chunk; less than `size`. */
  readonly overlap: number;
}

/** A chunk as `text.slice(start, end)`. */
export interface ChunkSpan {
  readonly start: number;
  readonly end: number;
}

/** How strong a break is, weakest first. */
const BREAK = { hardCut: 0, word: 1, line: 2, sentence: 3, paragraph: 4, end: 5 } as const;

/** A chunk may end early, at a stronger break, once it holds this share of `size`. */
const MIN_FILL = 0.5;

/** The chunks of `text`: none empty, none longer than `size`, together covering every word in order. */
export function chunkText(
  text: string,
  options: ChunkOptions = { size: CHUNK_SIZE, overlap: CHUNK_OVERLAP },
): string[] {
  return chunkSpans(text, options).map(({ start, end }) => text.slice(start, end));
}

export function chunkSpans(text: string, { size, overlap }: ChunkOptions): ChunkSpan[] {
  if (!Number.isInteger(size) || size < 1) throw new RangeError(`Chunk size must be a positive integer, not ${size}`);
  if (!Number.isInteger(overlap) || overlap < 0 || overlap >= size) {
    throw new RangeError(`Chunk overlap must be an integer from 0 to size - 1, not ${overlap}`);
  }
  const tokens = new Tokens(text, size);
  const length = (first: number, last: number) => tokens.end(last) - tokens.start(first);
  /**
   * Where the chunk after tokens `from..to` starts: the token in (from, to] after the strongest break (the earliest
   * of equals) whose tail fits in `overlap` and leaves room for the next token; without one, `to + 1`.
   */
  const overlapStart = (from: number, to: number): number => {
    let start = to + 1;
    for (
      let candidate = to;
      candidate > from && length(candidate, to) <= overlap && length(candidate, to + 1) <= size;
      candidate--
    ) {
      if (start === to + 1 || tokens.breakAfter(candidate - 1) >= tokens.breakAfter(start - 1)) start = candidate;
    }
    return start;
  };

  const spans: ChunkSpan[] = [];
  let first = 0; // first token of the chunk being built
  let fits = 0; // last token that fits in a chunk starting at `first`; never decreases
  let covered = -1; // last token already in a chunk
  while (tokens.has(covered + 1)) {
    fits = Math.max(fits, first);
    while (tokens.has(fits + 1) && length(first, fits + 1) <= size) fits++;

    // The strongest break among the ends that leave the chunk at least MIN_FILL full; the latest of equals.
    let last = fits;
    for (let candidate = fits - 1; candidate > covered && length(first, candidate) >= size * MIN_FILL; candidate--) {
      if (tokens.breakAfter(candidate) > tokens.breakAfter(last)) last = candidate;
    }
    spans.push({ start: tokens.start(first), end: tokens.end(last) });
    covered = last;
    if (!tokens.has(covered + 1)) break;

    // A chunk that ends a paragraph cut no thought: the next one starts without overlap.
    first = tokens.breakAfter(last) >= BREAK.paragraph ? last + 1 : overlapStart(first, last);
    // Nothing before the chunk's first token is looked at again.
    tokens.forgetBefore(first);
  }
  return spans;
}

/** `<documentId>#<position>#<first 16 hex digits of the SHA-256 of the text>`: the same content keeps its id. */
export function chunkId(documentId: string, position: number, text: string): string {
  const hash = createHash('sha256').update(text, 'utf8').digest('hex').slice(0, 16);
  return `${documentId}#${position}#${hash}`;
}

/**
 * The words of a text (runs without whitespace), cut after CJK full stops and into pieces no longer than the chunk
 * size, each with the strength of the break after it; token `i` is the i-th of the text. Read as the chunker moves on:
 * only the tokens from the first one not forgotten (`forgetBefore`) to the last one read are held, in typed arrays
 * that stay about a chunk's worth long, so a 50 MB text's millions of words are never held at once.
 */
class Tokens {
  /** Index of the token in slot 0 of the arrays. */
  private base = 0;
  /** Tokens read so far (indexes below this are known). */
  private count = 0;
  /** Tokens below this index are no longer needed. */
  private keep = 0;
  /** Where reading goes on in the text. */
  private index = 0;
  private starts = new Int32Array(1024);
  private ends = new Int32Array(1024);
  private breaks = new Uint8Array(1024);

  constructor(
    private readonly text: string,
    private readonly size: number,
  ) {
    while (this.index < text.length && isSpace(text.charCodeAt(this.index))) this.index++;
  }

  /** Whether the text has a token `i`, reading on as far as needed. */
  has(i: number): boolean {
    while (i >= this.count && this.index < this.text.length) this.readWord();
    return i < this.count;
  }

  start(i: number): number {
    return this.starts[i - this.base];
  }

  end(i: number): number {
    return this.ends[i - this.base];
  }

  breakAfter(i: number): number {
    return this.breaks[i - this.base];
  }

  forgetBefore(i: number): void {
    this.keep = Math.max(this.keep, i);
  }

  push(start: number, end: number, breakAfter: number): void {
    let slot = this.count - this.base;
    if (slot === this.starts.length) {
      const forgotten = Math.min(this.keep, this.count) - this.base;
      if (forgotten >= this.starts.length / 2) {
        // Half or more is forgotten: move the rest to the front.
        this.starts.copyWithin(0, forgotten, slot);
        this.ends.copyWithin(0, forgotten, slot);
        this.breaks.copyWithin(0, forgotten, slot);
        this.base += forgotten;
      } else {
        const grow = <T extends Int32Array | Uint8Array>(array: T, copy: T): T => {
          copy.set(array.subarray(forgotten, slot));
          return copy;
        };
        this.starts = grow(this.starts, new Int32Array(this.starts.length * 2));
        this.ends = grow(this.ends, new Int32Array(this.ends.length * 2));
        this.breaks = grow(this.breaks, new Uint8Array(this.breaks.length * 2));
        this.base += forgotten;
      }
      slot = this.count - this.base;
    }
    this.starts[slot] = start;
    this.ends[slot] = end;
    this.breaks[slot] = breakAfter;
    this.count++;
  }

  /** Reads the next word and the whitespace after it (the reader stands on the word's first character). */
  private readWord(): void {
    const { text, size } = this;
    let index = this.index;
    const start = index;
    let pieceStart = start;
    for (let code = text.charCodeAt(index); index < text.length && !isSpace(code); code = text.charCodeAt(index)) {
      index++;
      if (isCjkFullStop(code) && index < text.length && !isSpace(text.charCodeAt(index))) {
        pushHardCut(this, text, pieceStart, index, size, BREAK.sentence);
        pieceStart = index;
      }
    }
    const end = index;
    let newlines = 0;
    for (let code = text.charCodeAt(index); index < text.length && isSpace(code); code = text.charCodeAt(index)) {
      if (code === 0x0a || code === 0x2028) newlines++;
      else if (code === 0x2029) newlines += 2;
      index++;
    }
    this.index = index;
    pushHardCut(this, text, pieceStart, end, size, breakAfterWord(text, start, end, newlines, index === text.length));
  }
}

function breakAfterWord(text: string, start: number, end: number, newlines: number, atEnd: boolean): number {
  if (atEnd) return BREAK.end;
  if (newlines >= 2) return BREAK.paragraph;
  if (endsSentence(text, start, end)) return BREAK.sentence;
  return newlines === 1 ? BREAK.line : BREAK.word;
}

/** Whether the word ends with `.`, `!`, `?` or `…` (or a CJK full stop), possibly inside quotes or brackets. */
function endsSentence(text: string, start: number, end: number): boolean {
  let index = end - 1;
  while (index > start && CLOSERS.has(text.charCodeAt(index))) index--;
  return SENTENCE_TERMINALS.has(text.charCodeAt(index));
}

const SENTENCE_TERMINALS = new Set([...'.!?…。！？'].map((character) => character.charCodeAt(0)));
const CLOSERS = new Set([...')]"\'’”»'].map((character) => character.charCodeAt(0)));

function isCjkFullStop(code: number): boolean {
  return code === 0x3002 || code === 0xff01 || code === 0xff1f;
}

/** Exactly the characters of the regular expression class `\s`. */
function isSpace(code: number): boolean {
  if (code <= 0x20) return code === 0x20 || (code >= 0x09 && code <= 0x0d);
  if (code < 0xa0) return false;
  return (
    code === 0xa0 ||
    code === 0x1680 ||
    (code >= 0x2000 && code <= 0x200a) ||
    code === 0x2028 ||
    code === 0x2029 ||
    code === 0x202f ||
    code === 0x205f ||
    code === 0x3000 ||
    code === 0xfeff
  );
}

function pushHardCut(tokens: Tokens, text: string, start: number, end: number, size: number, breakAfter: number): void {
  let pieceStart = start;
  while (end - pieceStart > size) {
    let cut = pieceStart + size;
    if (size > 1 && isHighSurrogate(text.charCodeAt(cut - 1))) cut--;
    tokens.push(pieceStart, cut, BREAK.hardCut);
    pieceStart = cut;
  }
  tokens.push(pieceStart, end, breakAfter);
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}
