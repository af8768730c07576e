/**
 * The analyzer of the local index's lexical score (docs/retrieval.md, "Scores"): the terms of a text as the index's
 * BM25 index makes them (LanceDB's `simple` tokenizer, lowercase, ASCII folding, Snowball English stemming, then
 * NLTK's English stop words), in plain JS so that a query scores its candidates without a call into the engine per
 * chunk (`table.tokenize` costs ~0.12 ms a chunk). Where the two differ (scripts ASCII folding drops), the engine
 * only finds the candidates and this analyzer scores them, so scores stay a function of the text alone.
 */
import stem from 'wink-porter2-stemmer';

/** Tokens of this many UTF-8 bytes or more are dropped, as LanceDB's default `maxTokenLength` (40) does. */
const MAX_TOKEN_BYTES = 40;

/**
 * NLTK's English stop words as LanceDB's analyzer removes them: after stemming, so "because" (stem "becaus") stays.
 * Checked against `table.tokenize` in test/unit/lexical-analyzer.test.ts.
 */
const STOP_WORDS = new Set(
  (
    'i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her hers herself ' +
    'it its itself they them their theirs themselves what which who whom this that these those am is are was were be ' +
    'been being have has had having do does did doing a an the and but if or because as until while of at by for with ' +
    'about against between into through during before after above below to from up down in out on off over under ' +
    'again further then once here there when where why how all any both each few more most other some such no nor ' +
    'not only own same so than too very s t can will just don should now d ll m o re ve y ain aren couldn didn doesn ' +
    'hadn hasn haven isn ma mightn mustn needn shan shouldn wasn weren won wouldn'
  ).split(' '),
);

const ASCII = /^[a-z0-9]+$/;

/** Runs of letters and digits (Unicode), the `simple` tokenizer's split. No backtracking: one pass. */
const TOKEN = /[\p{L}\p{N}]+/gu;
/** The same split of a text without a non-ASCII character, several times faster. */
const ASCII_TOKEN = /[a-z0-9]+/g;
const NON_ASCII = /[\u0080-\uffff]/;

/** The tokens of a lowercase text. */
function tokensOf(lowercase: string): IterableIterator<RegExpMatchArray> {
  return lowercase.matchAll(NON_ASCII.test(lowercase) ? TOKEN : ASCII_TOKEN);
}

/** Combining marks NFKD splits off a Latin letter. */
const COMBINING_MARKS = /\p{M}+/gu;

/** Letters NFKD does not decompose that ASCII folding still maps. */
const FOLDED: Record<string, string> = { ß: 'ss', æ: 'ae', œ: 'oe', ø: 'o', đ: 'd', ð: 'd', þ: 'th', ł: 'l', ı: 'i' };

/** Latin letters folded to ASCII ("café" to "cafe", "straße" to "strasse"); other scripts are left as they are. */
function fold(token: string): string {
  let folded = '';
  for (const char of token) {
    if (!LATIN.test(char)) folded += char;
    else folded += FOLDED[char] ?? char.normalize('NFKD').replace(COMBINING_MARKS, '');
  }
  return folded;
}

const LATIN = /\p{Script=Latin}/u;

/** Terms of tokens seen before (null: a stop word or too long); cleared when full, so its memory is bounded. */
const termOfToken = new Map<string, string | null>();
const MAX_REMEMBERED_TOKENS = 100_000;

function termOf(token: string): string | null {
  let term = termOfToken.get(token);
  if (term !== undefined) return term;
  // The stemmer marks a consonant "y" with "3" as it works, so it would turn a digit 3 into "y": such tokens are
  // stemmed with their 3s swapped for a character it leaves alone.
  const stemmed = !/\p{L}/u.test(token) ? token : token.includes('3') ? stemWithThree(token) : stem(token);
  // As LanceDB's filters run: stop words after stemming, ASCII folding last.
  term = STOP_WORDS.has(stemmed) ? null : ASCII.test(stemmed) ? stemmed : fold(stemmed);
  if (term === '') term = null;
  if (termOfToken.size >= MAX_REMEMBERED_TOKENS) termOfToken.clear();
  termOfToken.set(token, term);
  return term;
}

/** A token holding the digit 3: stemmed with each 3 swapped for a character the stemmer leaves alone, then back. */
function stemWithThree(token: string): string {
  return stem(token.replaceAll('3', '\u0003')).replaceAll('\u0003', '3');
}

/**
 * A token the analyzer keeps a place for: under 40 bytes and not a stop word as written. (LanceDB drops stop words
 * after stemming only, so it keeps "does" as "doe"; here it is dropped before, as the word it is.)
 */
function counted(token: string): boolean {
  if (token.length >= MAX_TOKEN_BYTES || STOP_WORDS.has(token)) return false;
  return ASCII.test(token) || Buffer.byteLength(token) < MAX_TOKEN_BYTES;
}

/**
 * The terms of `text`, in order, repeated as often as they occur (each counted token's stem, folded, unless that is a
 * stop word), and its length as the lexical score measures it: its counted tokens.
 */
export function analyzeChunk(text: string): { terms: string[]; length: number } {
  const terms: string[] = [];
  let length = 0;
  for (const match of tokensOf(text.toLowerCase())) {
    if (!counted(match[0])) continue;
    length++;
    const term = termOf(match[0]);
    if (term !== null) terms.push(term);
  }
  return { terms, length };
}

/** The terms of `text` (`analyzeChunk`). */
export function analyze(text: string): string[] {
  return analyzeChunk(text).terms;
}

/**
 * How often each of `terms` (analyzed) occurs in `text`, and its length (both as `analyzeChunk` gives them), in one pass that stems only the
 * tokens that can match: a stem keeps its word's first letter, so an ASCII token whose first letter starts no query
 * term is only counted. About 5 times faster than `analyze` on a chunk, which matters at query time.
 */
export function termCountsOf(text: string, terms: readonly string[]): { counts: Map<string, number>; length: number } {
  const wanted = new Set(terms);
  const firstLetters = new Set(terms.map((term) => term.charCodeAt(0)));
  const counts = new Map<string, number>();
  let length = 0;
  const lowercase = text.toLowerCase();
  if (NON_ASCII.test(lowercase)) {
    for (const match of lowercase.matchAll(TOKEN)) {
      const token = match[0];
      if (!counted(token)) continue;
      length++;
      if (ASCII.test(token) && !firstLetters.has(token.charCodeAt(0))) continue;
      const term = termOf(token);
      if (term !== null && wanted.has(term)) counts.set(term, (counts.get(term) ?? 0) + 1);
    }
    return { counts, length };
  }
  // ASCII: the tokens are found by hand, and only those that can match are cut out of the text.
  const end = lowercase.length;
  for (let i = 0; i < end; ) {
    if (!isWordCode(lowercase.charCodeAt(i))) {
      i++;
      continue;
    }
    const start = i;
    while (i < end && isWordCode(lowercase.charCodeAt(i))) i++;
    if (i - start >= MAX_TOKEN_BYTES) continue;
    const matches = firstLetters.has(lowercase.charCodeAt(start));
    // Stop words are at most 10 letters long: a longer token is counted without looking it up.
    if (!matches && i - start > 10) {
      length++;
      continue;
    }
    const token = lowercase.slice(start, i);
    if (STOP_WORDS.has(token)) continue;
    length++;
    if (!matches) continue;
    const term = termOf(token);
    if (term !== null && wanted.has(term)) counts.set(term, (counts.get(term) ?? 0) + 1);
  }
  return { counts, length };
}

/** a–z and 0–9. */
function isWordCode(code: number): boolean {
  return (code >= 97 && code <= 122) || (code >= 48 && code <= 57);
}
