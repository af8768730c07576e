import { normalizeWhitespace } from '#adapters/extraction/text-extractor';

/** The rules as chained regular expressions: what normalizeWhitespace did before it became one pass. */
function byRegularExpressions(text: string): string {
  return (
    text
      .replace(/\r\n?|[\v\u0085\u2028]/g, '\n')
      .replace(/[\f\u2029]/g, '\n\n')
      // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this line removes
      .replace(/[\u0000-\u0008\u000e-\u001f\u007f]/g, ' ')
      .replace(/[^\S\n]+/g, ' ')
      .replace(/ ?\n ?/g, '\n')
      .replace(/\n{3,}/g, '\n\n')
      .trim()
  );
}

/** Every character the rules treat apart, and some they do not. */
const ALPHABET = [
  'a',
  'Z',
  '.',
  'é',
  '中',
  '\u200b',
  '\ud83d\ude00',
  ' ',
  '\t',
  '\n',
  '\r',
  '\r\n',
  '\v',
  '\f',
  '\u0000',
  '\u0008',
  '\u000e',
  '\u001f',
  '\u007f',
  '\u0085',
  '\u00a0',
  '\u1680',
  '\u2000',
  '\u200a',
  '\u2028',
  '\u2029',
  '\u202f',
  '\u205f',
  '\u3000',
  '\ufeff',
];

function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

test('gives what the chained regular expressions gave, on 20,000 random texts of every kind of whitespace', () => {
  const random = seededRandom(20);
  for (let round = 0; round < 20_000; round++) {
    const length = Math.floor(random() * 30);
    let text = '';
    for (let i = 0; i < length; i++) text += ALPHABET[Math.floor(random() * ALPHABET.length)];
    const expected = byRegularExpressions(text);
    if (normalizeWhitespace(text) !== expected) {
      expect([JSON.stringify(text), normalizeWhitespace(text)]).toEqual([JSON.stringify(text), expected]);
    }
  }
});

test('a text longer than one piece (1 MB) comes out whole, runs across piece ends included', () => {
  const line = 'word  \t word\r\n\r\n\r\n';
  const text = `  ${line.repeat(200_000)}end \n`;
  expect(text.length).toBeGreaterThan(3_000_000);
  expect(normalizeWhitespace(text)).toBe(byRegularExpressions(text));
});

test('a text whose every run changes (more than 65,536 of them) comes out whole', () => {
  const text = 'a  b\t\tc \n d\r\n\r\n\r\ne\f'.repeat(30_000);
  expect(normalizeWhitespace(text)).toBe(byRegularExpressions(text));
});
