/**
 * Generate with citations outside Bedrock RetrieveAndGenerate: an answer built from retrieval results, each
 * citation pointing at the result it came from. Primary course: no results, no answer; no model configured, an
 * extractive answer (the sentences of the results that best match the query, quoted); a model configured, its
 * answer to a prompt of numbered results, with its `[n]` markers read back as citations.
 */
import type { ModelProvider } from '#ports/model';
import type { IndexHit } from '#ports/processing';

export const NOT_FOUND_ANSWER = 'I could not find this in the knowledge base.';
export const EXTRACTIVE_MAX_SENTENCES = 3;
export const EXTRACTIVE_MAX_CHARACTERS = 600;
/** A sentence joins the answer only when its gain is at least this share of the first pick's. */
export const EXTRACTIVE_RELATIVE_CUT = 0.4;
/** Shorter fragments (headings, table cells, list stubs) are quoted only when the results hold nothing longer. */
const MIN_SENTENCE_WORDS = 4;
const MODEL_MAX_TOKENS = 1024;

export interface Citation {
  /** 0-based index into the results the answer was generated from. */
  readonly resultIndex: number;
  readonly documentId: string;
  readonly s3Key: string;
  readonly chunkId: string;
  /** The sentence of that result quoted in the answer (extractive answers only). */
  readonly sentence?: string;
}

export interface GeneratedAnswer {
  readonly answer: string;
  readonly citations: readonly Citation[];
}

export const GENERATE_SYSTEM_PROMPT = [
  'You answer questions using only the numbered search results you are given.',
  'Cite the result behind every statement with its number in square brackets, for example [1] or [2][3].',
  `If the results do not contain the answer, reply exactly: ${NOT_FOUND_ANSWER}`,
].join(' ');

/**
 * The answer to `query` from `results` (best first, as retrieval returns them). With `model` null the answer is
 * extractive and deterministic. With a model, its `[n]` markers become citations (numbers outside 1..results are
 * ignored, repeats cited once); when the model cites nothing, its answer is returned as is, with no citations.
 */
export async function generateWithCitations(
  model: ModelProvider | null,
  query: string,
  results: readonly IndexHit[],
): Promise<GeneratedAnswer> {
  if (results.length === 0) return { answer: NOT_FOUND_ANSWER, citations: [] };
  return model === null ? extractiveAnswer(query, results) : modelAnswer(model, query, results);
}

// ---------------------------------------------------------------------------------------------------------------
// With a model

export function buildGeneratePrompt(query: string, results: readonly IndexHit[]): string {
  const numbered = results.map((hit, i) => `[${i + 1}] ${hit.chunk.text.trim()}`).join('\n\n');
  return `Search results:\n\n${numbered}\n\nQuestion: ${query.trim()}`;
}

async function modelAnswer(
  model: ModelProvider,
  query: string,
  results: readonly IndexHit[],
): Promise<GeneratedAnswer> {
  const { text } = await model.generate({
    system: GENERATE_SYSTEM_PROMPT,
    messages: [{ role: 'user', content: buildGeneratePrompt(query, results) }],
    maxTokens: MODEL_MAX_TOKENS,
    temperature: 0,
  });
  const answer = text.trim();
  if (answer === '') return { answer: NOT_FOUND_ANSWER, citations: [] };
  return { answer, citations: citedResults(answer, results.length).map((i) => citationOf(results, i)) };
}

/** 0-based indexes of the results `[n]`, `[n][m]` or `[n, m]` markers cite, in order of first mention. */
export function citedResults(answer: string, resultCount: number): number[] {
  const cited = new Set<number>();
  for (const marker of answer.matchAll(/\[(\d+(?:\s*,\s*\d+)*)\]/g)) {
    for (const part of marker[1].split(',')) {
      const n = Number(part.trim());
      if (n >= 1 && n <= resultCount) cited.add(n - 1);
    }
  }
  return [...cited];
}

function citationOf(results: readonly IndexHit[], resultIndex: number, sentence?: string): Citation {
  const { documentId, s3Key, chunkId } = results[resultIndex].chunk;
  return sentence === undefined
    ? { resultIndex, documentId, s3Key, chunkId }
    : { resultIndex, documentId, s3Key, chunkId, sentence };
}

// ---------------------------------------------------------------------------------------------------------------
// Extractive: no model, no network

interface Candidate {
  readonly resultIndex: number;
  /** Order of the sentence in its result. */
  readonly order: number;
  readonly text: string;
  readonly terms: ReadonlySet<string>;
}

/**
 * Greedy selection with diminishing returns. A sentence's gain is the sum, over the query terms it holds, of the
 * term's idf among the sentences divided by 1 + the times an already chosen sentence holds it; the sentence of
 * highest gain is taken (ties to the better-ranked result, then the earlier sentence) until EXTRACTIVE_MAX_SENTENCES,
 * the character budget, or a gain under EXTRACTIVE_RELATIVE_CUT of the first pick's. So a term every sentence
 * shares counts little, and a second sentence must add something the first did not say. The chosen sentences are
 * quoted in result order, each followed by its `[n]` marker and cited. When no sentence holds a query term (a
 * vector match without a shared word), the first sentence of the top result is quoted.
 */
function extractiveAnswer(query: string, results: readonly IndexHit[]): GeneratedAnswer {
  let candidates = sentenceCandidates(results, MIN_SENTENCE_WORDS);
  if (candidates.length === 0) candidates = sentenceCandidates(results, 1);
  if (candidates.length === 0) return { answer: NOT_FOUND_ANSWER, citations: [] };

  const idf = new Map<string, number>();
  for (const term of new Set(terms(query))) {
    const df = candidates.filter((c) => c.terms.has(term)).length;
    if (df > 0) idf.set(term, Math.log(1 + candidates.length / df));
  }
  const timesCovered = new Map<string, number>();
  const gain = (candidate: Candidate) => {
    let sum = 0;
    for (const [term, weight] of idf) {
      if (candidate.terms.has(term)) sum += weight / (1 + (timesCovered.get(term) ?? 0));
    }
    return sum;
  };

  const chosen: Candidate[] = [];
  const remaining = new Set(candidates);
  let firstGain = 0;
  let characters = 0;
  while (chosen.length < EXTRACTIVE_MAX_SENTENCES) {
    let pick: Candidate | undefined;
    let pickGain = 0;
    // Candidates are in result order, then sentence order: a strict `>` leaves ties to the earlier one.
    for (const candidate of remaining) {
      if (chosen.length > 0 && characters + candidate.text.length > EXTRACTIVE_MAX_CHARACTERS) continue;
      const g = gain(candidate);
      if (g > pickGain) [pick, pickGain] = [candidate, g];
    }
    if (pick === undefined || pickGain < firstGain * EXTRACTIVE_RELATIVE_CUT) break;
    if (chosen.length === 0) firstGain = pickGain;
    chosen.push(pick);
    remaining.delete(pick);
    characters += pick.text.length;
    for (const term of pick.terms) {
      if (idf.has(term)) timesCovered.set(term, (timesCovered.get(term) ?? 0) + 1);
    }
  }
  if (chosen.length === 0) chosen.push(candidates[0]);

  const quoted = chosen
    .sort((a, b) => a.resultIndex - b.resultIndex || a.order - b.order)
    .map((c) => ({ ...c, text: truncate(c.text, EXTRACTIVE_MAX_CHARACTERS) }));
  return {
    answer: quoted.map((c) => `${c.text} [${c.resultIndex + 1}]`).join(' '),
    citations: quoted.map((c) => citationOf(results, c.resultIndex, c.text)),
  };
}

/** Sentences of every result, in result order; a sentence repeated by an overlapping chunk is kept once. */
function sentenceCandidates(results: readonly IndexHit[], minWords: number): Candidate[] {
  const seen = new Set<string>();
  const candidates: Candidate[] = [];
  results.forEach((hit, resultIndex) => {
    splitSentences(hit.chunk.text).forEach((text, order) => {
      const words = text.match(WORD) ?? [];
      const key = words.join(' ').toLowerCase();
      if (words.length < minWords || seen.has(key)) return;
      seen.add(key);
      candidates.push({ resultIndex, order, text, terms: new Set(terms(text)) });
    });
  });
  return candidates;
}

const WORD = /[\p{L}\p{N}]+/gu;

/** Lines first (headings and list items end without a stop), then `.`, `!` or `?` before a capital or a digit. */
export function splitSentences(text: string): string[] {
  return text
    .split(/\n+/)
    .map((line) => line.replace(/^\s*(?:#{1,6}|[-*+>]|\d+[.)])\s+/, '').trim())
    .flatMap((line) => line.split(/(?<=[.!?])\s+(?=["'“‘([]?[\p{Lu}\p{N}])/u))
    .map((sentence) => sentence.replace(/\s+/g, ' ').trim())
    .filter((sentence) => sentence !== '');
}

const STOPWORDS = new Set(
  (
    'a about above after again all also am an and any are as at be because been before being below between both but ' +
    'by can could did do does doing down during each few for from further had has have having he her here hers him ' +
    'his how i if in into is it its itself just me more most my no nor not now of off on once only or other our ours ' +
    'out over own same she should so some such than that the their theirs them then there these they this those ' +
    'through to too under until up very was we were what when where which while who whom why will with would you ' +
    'your yours many much please tell'
  ).split(' '),
);

/** Query and sentence terms: lower case, accents dropped, stopwords out, plural and verb endings cut. */
export function terms(text: string): string[] {
  const words = text.normalize('NFKD').replace(/\p{M}/gu, '').toLowerCase().match(WORD) ?? [];
  return words.filter((word) => !STOPWORDS.has(word)).map(stem);
}

/** Stemming-lite: enough for `refunds`/`refunded`/`refunding`/`refund` and `policies`/`policy` to meet. */
function stem(word: string): string {
  if (word.length <= 3 || /^\p{N}+$/u.test(word)) return word;
  let w = word;
  if (w.endsWith('ies') && w.length > 4) w = `${w.slice(0, -3)}y`;
  else if (/(?:ss|x|z|ch|sh)es$/.test(w)) w = w.slice(0, -2);
  else if (w.endsWith('s') && !w.endsWith('ss') && !w.endsWith('us') && !w.endsWith('is')) w = w.slice(0, -1);
  if (w.endsWith('ing') && w.length > 5) w = undouble(w.slice(0, -3));
  else if (w.endsWith('ed') && w.length > 4) w = undouble(w.slice(0, -2));
  if (w.endsWith('e') && w.length > 3) w = w.slice(0, -1);
  return w;
}

function undouble(w: string): string {
  return /([b-df-hj-km-np-rtv-z])\1$/.test(w) && !/(?:ll|ss|zz)$/.test(w) ? w.slice(0, -1) : w;
}

function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = text.slice(0, max - 1);
  const space = cut.lastIndexOf(' ');
  return `${(space > max / 2 ? cut.slice(0, space) : cut).trimEnd()}…`;
}
