import fc from 'fast-check';
import {
  CHUNK_OVERLAP,
  CHUNK_SIZE,
  type ChunkOptions,
  chunkId,
  chunkSpans,
  chunkText,
} from '#core/processing/chunking';

const withoutWhitespace = (text: string) => text.replace(/\s+/g, '');
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Text shaped like documents (up to about 3,000 characters): words, sentence ends, breaks, long words, emoji, CJK. */
const documentText = fc
  .array(
    fc.oneof(
      { weight: 8, arbitrary: fc.stringMatching(/^[A-Za-z]{1,12}$/) },
      { weight: 3, arbitrary: fc.constantFrom(' ', '  ', '\t', ' \u00a0') },
      { weight: 2, arbitrary: fc.constantFrom('. ', '! ', '? ', '." ', '… ') },
      { weight: 2, arbitrary: fc.constantFrom('\n', '\n\n', ' \n \n ', '\r\n\r\n') },
      { weight: 1, arbitrary: fc.stringMatching(/^[a-z]{20,120}$/) },
      { weight: 1, arbitrary: fc.constantFrom('😀', '👍🏽', '日本語の文です。', '次の文。') },
    ),
    { maxLength: 400, size: 'max' },
  )
  .map((parts) => parts.join(''));

/** Anything at all, lone surrogates and control characters included. */
const anyText = fc.string({ unit: 'binary', maxLength: 600, size: 'max' });

const chunkOptions = fc
  .integer({ min: 1, max: 300 })
  .chain((size) => fc.record({ size: fc.constant(size), overlap: fc.integer({ min: 0, max: size - 1 }) }));

const texts = fc.oneof(documentText, anyText);

// Each property collects what is wrong and asserts once: a jest `expect` per chunk would dominate the run time.
describe('chunkText properties', () => {
  it('never returns an empty chunk, nor one longer than size (overlap included)', () => {
    fc.assert(
      fc.property(texts, chunkOptions, (text, options) => {
        const wrong = chunkText(text, options).filter(
          (chunk) => chunk.length > options.size || !/\S/.test(chunk) || chunk.trim() !== chunk,
        );
        expect(wrong).toEqual([]);
      }),
    );
  });

  it('covers every non-whitespace character of the text, in order', () => {
    fc.assert(
      fc.property(texts, chunkOptions, (text, options) => {
        const spans = chunkSpans(text, options);
        expect(spans.map(({ start, end }) => text.slice(start, end))).toEqual(chunkText(text, options));
        const problems: string[] = [];
        let covered = 0;
        let rebuilt = '';
        for (const [index, { start, end }] of spans.entries()) {
          const previous = spans[index - 1];
          if (previous && start <= previous.start) problems.push(`chunk ${index} does not move forward`);
          if (previous && end <= previous.end) problems.push(`chunk ${index} brings no text of its own`);
          if (/\S/.test(text.slice(covered, start))) problems.push(`text skipped before chunk ${index}`);
          rebuilt += text.slice(Math.max(start, covered), end);
          covered = Math.max(covered, end);
        }
        if (/\S/.test(text.slice(covered))) problems.push('text skipped at the end');
        expect(problems).toEqual([]);
        expect(withoutWhitespace(rebuilt)).toBe(withoutWhitespace(text));
      }),
    );
  });

  it('repeats no more than `overlap` characters of one chunk at the start of the next', () => {
    fc.assert(
      fc.property(texts, chunkOptions, (text, options) => {
        const spans = chunkSpans(text, options);
        const overlaps = spans.slice(1).map((span, index) => spans[index].end - span.start);
        expect(overlaps.filter((overlap) => overlap > options.overlap)).toEqual([]);
      }),
    );
  });

  it('is deterministic', () => {
    fc.assert(
      fc.property(texts, chunkOptions, (text, options) => {
        expect(chunkText(text, options)).toEqual(chunkText(text, options));
      }),
    );
  });

  it('never splits a surrogate pair when the size allows it', () => {
    fc.assert(
      fc.property(documentText, chunkOptions, (text, options) => {
        fc.pre(options.size > 1);
        expect(chunkText(text, options).filter((chunk) => LONE_SURROGATE.test(chunk))).toEqual([]);
      }),
    );
  });
});

describe('chunkId properties', () => {
  it('is <documentId>#<position>#<16 hex digits>, the same for the same content', () => {
    fc.assert(
      fc.property(fc.uuid(), fc.nat({ max: 10_000 }), fc.string({ minLength: 1 }), (documentId, position, text) => {
        const id = chunkId(documentId, position, text);
        expect(id).toMatch(new RegExp(`^${documentId}#${position}#[0-9a-f]{16}$`));
        expect(chunkId(documentId, position, text)).toBe(id);
      }),
    );
  });

  it('differs when the text differs', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (a, b) => {
        fc.pre(a !== b);
        expect(chunkId('doc', 0, a)).not.toBe(chunkId('doc', 0, b));
      }),
    );
  });
});

describe('chunkText examples', () => {
  const sentence = (n: number) => `Sentence number ${String(n).padStart(2, '0')} says one short thing.`; // 40 chars
  const sentences = (from: number, to: number) =>
    Array.from({ length: to - from + 1 }, (_, i) => sentence(from + i)).join(' ');

  it('uses the documented defaults: 1,000 characters with 150 of overlap', () => {
    expect(CHUNK_SIZE).toBe(1000);
    expect(CHUNK_OVERLAP).toBe(150);
    const text = sentences(1, 60); // about 2,460 characters
    expect(chunkText(text)).toEqual(chunkText(text, { size: 1000, overlap: 150 }));
    expect(chunkText(text).every((chunk) => chunk.length <= 1000)).toBe(true);
  });

  it('ends chunks at sentence ends and starts the overlap at a sentence start', () => {
    const chunks = chunkText(sentences(1, 12), { size: 200, overlap: 60 });
    expect(chunks.length).toBeGreaterThan(2);
    for (const chunk of chunks) expect(chunk).toMatch(/^Sentence number \d\d .*thing\.$/s);
    // The last sentence of each chunk opens the next one.
    for (let index = 1; index < chunks.length; index++) {
      const lastSentence = chunks[index - 1].slice(chunks[index - 1].lastIndexOf('Sentence number'));
      expect(chunks[index].startsWith(lastSentence)).toBe(true);
    }
  });

  it('prefers a paragraph end to a later sentence end, and adds no overlap after a paragraph', () => {
    const first = sentences(1, 3); // 122 characters
    const second = sentences(4, 8);
    const chunks = chunkText(`${first}\n\n${second}`, { size: 200, overlap: 60 });
    expect(chunks[0]).toBe(first);
    expect(chunks[1].startsWith(sentence(4))).toBe(true);
  });

  it('cuts an over-long sentence between words, then a word longer than the chunk hard', () => {
    const words = Array.from({ length: 40 }, (_, i) => `word${i}`).join(' ');
    for (const chunk of chunkText(words, { size: 50, overlap: 10 })) {
      expect(chunk.length).toBeLessThanOrEqual(50);
      expect(chunk).toMatch(/^word\d+( word\d+)*$/); // no word cut
    }
    expect(chunkText('x'.repeat(2500), { size: 1000, overlap: 150 }).map((chunk) => chunk.length)).toEqual([
      1000, 1000, 500,
    ]);
  });

  it('ends sentences at CJK full stops, which have no space after them', () => {
    expect(chunkText('日本語の文です。次の文です。三番目の文です。', { size: 10, overlap: 0 })).toEqual([
      '日本語の文です。',
      '次の文です。',
      '三番目の文です。',
    ]);
  });

  it('returns no chunk for empty or whitespace-only text', () => {
    expect(chunkText('')).toEqual([]);
    expect(chunkText(' \n\n\t ')).toEqual([]);
  });

  it('returns short text as one chunk, trimmed', () => {
    expect(chunkText('  A short note.\n')).toEqual(['A short note.']);
  });

  it.each<ChunkOptions>([
    { size: 0, overlap: 0 },
    { size: 100, overlap: 100 },
    { size: 100, overlap: -1 },
    { size: 10.5, overlap: 1 },
  ])('rejects size $size with overlap $overlap', (options) => {
    expect(() => chunkText('text', options)).toThrow(RangeError);
  });
});

describe('chunkId examples', () => {
  it('hashes the text with SHA-256', () => {
    // sha256("hello") = 2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824
    expect(chunkId('doc-1', 0, 'hello')).toBe('doc-1#0#2cf24dba5fb0a30e');
  });

  it('depends on the position, so two equal chunks of one document keep distinct ids', () => {
    expect(chunkId('doc-1', 0, 'same')).not.toBe(chunkId('doc-1', 1, 'same'));
  });
});
