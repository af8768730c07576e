/**
 * A real text corpus built from files on this machine, for the retrieval quality test and the retrieval benchmark:
 * the English man pages (gzipped roff, stripped crudely), else the text files under /usr/share/doc, else the READMEs
 * of the installed npm packages (always there once `npm ci` ran). Each page comes with a query derived from it, its
 * one-line description without the name (the "description only" queries of docs/retrieval.md), so a query has one
 * right page. The selection is a fixed function of the files present: sorted paths, a cap per family, an even stride.
 */
import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import type { LanceKnowledgeIndex } from '#adapters/index/lancedb';

export interface CorpusPage {
  /** Stable id: the path relative to the source's root. */
  readonly id: string;
  /** The description the query is made of. */
  readonly description: string;
  /** Plain text, at most `maxPageChars` long. */
  readonly text: string;
}

export type CorpusSource = 'man' | 'doc' | 'npm';

export interface Corpus {
  readonly source: CorpusSource;
  readonly pages: readonly CorpusPage[];
}

export interface CorpusOptions {
  /** Pages wanted; fewer when the machine has fewer eligible files. */
  readonly pages: number;
  /** Each page's text is cut after this many characters (some man pages are megabytes). */
  readonly maxPageChars: number;
  /**
   * At most this many files of one family (the file name up to its first `-`, `_`, `.` or `:`), so that one tool's
   * hundreds of generated pages (gcloud ships 16k) do not make the corpus a single product's reference.
   */
  readonly perFamily: number;
  /**
   * Remove the description from the page's text (the man page's NAME line, the README's line), so that a query
   * must find the page by what the rest of it says rather than by one verbatim line.
   */
  readonly withoutDescription?: boolean;
  /** Sources to try, in order; the first with at least `minimumPages` eligible pages is used. */
  readonly sources?: readonly CorpusSource[];
  readonly minimumPages?: number;
}

export interface CorpusQuery {
  readonly text: string;
  readonly pageId: string;
}

const MAN_ROOT = '/usr/share/man';
const DOC_ROOT = '/usr/share/doc';
const NPM_ROOT = join(__dirname, '..', '..', 'node_modules');
/** Bytes read from any one file, compressed or not. */
const MAX_FILE_BYTES = 4 * 1024 * 1024;
/** A description shorter than this many words is a poor query (and often a placeholder). */
const MIN_DESCRIPTION_WORDS = 3;
/** A longer "description" is a paragraph that happens to sit in the NAME section, not a one-line summary. */
const MAX_DESCRIPTION_WORDS = 25;
const MIN_TEXT_CHARS = 400;

// ---------------------------------------------------------------------------------------------------------------
// Candidate files of each source, sorted.

function isRegularFile(path: string): boolean {
  try {
    return lstatSync(path).isFile();
  } catch {
    return false;
  }
}

function listDirectory(directory: string): string[] {
  try {
    return readdirSync(directory).sort();
  } catch {
    return [];
  }
}

function manCandidates(): string[] {
  const sections = listDirectory(MAN_ROOT).filter((name) => /^man[1-8]$/.test(name));
  return sections.flatMap((section) =>
    listDirectory(join(MAN_ROOT, section))
      .map((name) => join(MAN_ROOT, section, name))
      .filter(isRegularFile),
  );
}

const DOC_FILE = /^(readme|news|faq|intro|overview|usage)([._-].*)?$|\.(txt|md|rst)(\.gz)?$/i;
const DOC_SKIPPED = /^(changelog|copyright|license|licence|copying)/i;

function docCandidates(): string[] {
  const found: string[] = [];
  const walk = (directory: string, depth: number) => {
    for (const name of listDirectory(directory)) {
      const path = join(directory, name);
      let stat: ReturnType<typeof lstatSync>;
      try {
        stat = lstatSync(path);
      } catch {
        continue;
      }
      if (stat.isDirectory() && depth < 3) walk(path, depth + 1);
      else if (stat.isFile() && DOC_FILE.test(name) && !DOC_SKIPPED.test(name)) found.push(path);
    }
  };
  walk(DOC_ROOT, 0);
  return found.sort();
}

/** The package folders under node_modules (scoped ones included), each with its package.json. */
function npmCandidates(): string[] {
  const folders: string[] = [];
  for (const name of listDirectory(NPM_ROOT)) {
    if (name.startsWith('.')) continue;
    if (name.startsWith('@')) {
      for (const inner of listDirectory(join(NPM_ROOT, name))) folders.push(join(NPM_ROOT, name, inner));
    } else {
      folders.push(join(NPM_ROOT, name));
    }
  }
  return folders.filter((folder) => isRegularFile(join(folder, 'package.json'))).sort();
}

function familyOf(source: CorpusSource, path: string): string {
  const name = source === 'man' ? basename(path) : source === 'doc' ? path.slice(DOC_ROOT.length + 1) : basename(path);
  return name.split(/[-_.:/]/)[0].toLowerCase();
}

// ---------------------------------------------------------------------------------------------------------------
// Reading a file into a page.

function readText(path: string): string | null {
  try {
    const raw = readFileSync(path);
    if (raw.length > MAX_FILE_BYTES) return null;
    const bytes = path.endsWith('.gz') ? gunzipSync(raw, { maxOutputLength: MAX_FILE_BYTES * 8 }) : raw;
    const text = bytes.toString('utf8');
    // Binary or another encoding: not a text page.
    return text.includes('\u0000') || text.includes('\ufffd') ? null : text;
  } catch {
    return null;
  }
}

const ROFF_SPECIALS: Record<string, string> = {
  em: ' - ',
  en: '-',
  hy: '-',
  aq: "'",
  dq: '"',
  lq: '"',
  rq: '"',
  oq: "'",
  cq: "'",
  bu: '*',
  co: '(c)',
  rg: '(R)',
  tm: '(TM)',
  mu: 'x',
  '->': '->',
  '<-': '<-',
  ti: '~',
  ha: '^',
  rs: '\\',
  ga: '`',
  ba: '|',
};

/** Inline roff escapes of one line: fonts and sizes dropped, special characters approximated. */
function stripInline(line: string): string {
  return line
    .replace(/\\".*$/, '')
    .replace(/\\f(\[[^\]]*\]|\(..|.)/g, '')
    .replace(/\\s[+-]?(\d|\(\d\d|\[\d+\])/g, '')
    .replace(/\\\((..)/g, (_, name: string) => ROFF_SPECIALS[name] ?? ' ')
    .replace(/\\\[([^\]]*)\]/g, (_, name: string) => ROFF_SPECIALS[name] ?? ' ')
    .replace(/\\\*(\[[^\]]*\]|\(..|.)/g, '')
    .replace(/\\[nkz](\[[^\]]*\]|\(..|.)/g, '')
    .replace(/\\[eE]/g, '\\')
    .replace(/\\[-]/g, '-')
    .replace(/\\[ ~0]/g, ' ')
    .replace(/\\[&|^%c):,/dur{}]/g, '')
    .replace(/\\(.)/g, '$1');
}

/** Macros whose arguments are text of the page; other request lines are dropped. */
const TEXT_MACROS = new Set(
  (
    'SH SS B I BI BR IB IR RB RI SM SB IP TP HP UR MT ' +
    'Sh Ss Nm Nd Fl Ar Cm Xr Pa Dv Va Fn Fa Ft Fo Op Oo It Li Em Sy Ic Dq Ql Sq Pq Qq Ev Er Tn Ux At Bx St Lb Cd In'
  ).split(' '),
);

const BREAK_REQUESTS = new Set(['PP', 'P', 'LP', 'Pp', 'sp', 'br']);

/** Roff (man or mdoc) to plain text, crudely: request lines dropped or replaced by their arguments, escapes removed. */
export function roffToText(source: string): string {
  const lines: string[] = [];
  let inDefinition = false;
  // A backslash at the end of a line continues it on the next.
  for (const raw of source.replace(/\\\n/g, '').split('\n')) {
    // Macro definitions and ignored blocks (`.de NAME` … `..`) hold roff code, not text.
    if (inDefinition) {
      if (/^\.\s*\.\s*$/.test(raw)) inDefinition = false;
      continue;
    }
    if (/^\.\s*(de1?|am|ig)\b/.test(raw)) {
      inDefinition = true;
      continue;
    }
    if (raw.startsWith('.\\"') || /^[.']\s*\\"/.test(raw)) continue;
    if (raw.startsWith('.') || raw.startsWith("'")) {
      const request = /^[.']\s*([A-Za-z]{1,3}[0-9]?)\b\s*(.*)$/.exec(raw);
      if (!request || !TEXT_MACROS.has(request[1])) {
        if (request && BREAK_REQUESTS.has(request[1])) lines.push('');
        continue;
      }
      const args = request[2]
        .replace(/"/g, '')
        // mdoc: macro names among the arguments (`Fl Ar file`).
        .replace(/\b(Fl|Ar|Cm|Xr|Pa|Ns|Op|Oc|Oo|Ql|Dq|Sq|Pq|Li|Em|Sy|Ic|Ev|Va|Dv|Fa|Fn)\b\s*/g, '');
      const text = stripInline(args).trim();
      if (request[1] === 'SH' || request[1] === 'Sh' || request[1] === 'SS' || request[1] === 'Ss') {
        lines.push('', text, '');
      } else if (text) {
        lines.push(text);
      }
      continue;
    }
    lines.push(stripInline(raw));
  }
  return normalizeText(lines.join('\n'));
}

function normalizeText(text: string): string {
  return text
    .replace(/[ \t]+/g, ' ')
    .replace(/ *\n */g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/** The description of the NAME section: `ls \- list directory contents` gives `list directory contents`. */
function manDescription(source: string): string | null {
  const mdoc = /^\.Nd\s+(.+)$/m.exec(source);
  if (mdoc) return stripInline(mdoc[1].replace(/"/g, '')).trim();
  const section = /^\.S[Hh]\s+"?NAME"?\s*\n([\s\S]*?)(?=^\.S[Hh]\b)/m.exec(source);
  if (!section) return null;
  // The first paragraph: some pages go on with a synopsis or the names of related commands.
  const text = roffToText(section[1]).split('\n\n')[0].replace(/\s+/g, ' ');
  const dash = /\s[-\u2013\u2014]+\s/.exec(text);
  return dash ? text.slice(dash.index + dash[0].length).trim() : null;
}

function manPage(path: string): Omit<CorpusPage, 'id'> | null {
  const source = readText(path);
  // `.so other.1` pages are aliases of another page.
  if (!source || /^\.so\s/m.test(source.slice(0, 200))) return null;
  const description = manDescription(source);
  if (!description) return null;
  return { description, text: roffToText(source) };
}

/** A README or text file: its first prose line of 6 to 30 words (after the title) is the description. */
function docPage(path: string): Omit<CorpusPage, 'id'> | null {
  const source = readText(path);
  if (!source) return null;
  const text = normalizeText(source.replace(/\r\n?/g, '\n'));
  const lines = text.split('\n').slice(1);
  const description = lines
    .map((line) => line.replace(/[#*_`>[\]]/g, ' ').trim())
    .find((line) => {
      const words = line.split(/\s+/).filter((word) => /[a-z]/i.test(word)).length;
      return words >= 6 && words <= 30 && /^[A-Z]/.test(line) && !/https?:|@|\|/.test(line);
    });
  return description ? { description, text } : null;
}

/** An npm package: its package.json description is the query, its README the page. */
function npmPage(folder: string): Omit<CorpusPage, 'id'> | null {
  let description: unknown;
  try {
    ({ description } = JSON.parse(readFileSync(join(folder, 'package.json'), 'utf8')) as { description?: unknown });
  } catch {
    return null;
  }
  if (typeof description !== 'string') return null;
  const readme = listDirectory(folder).find((name) => /^readme(\.md|\.markdown|\.txt)?$/i.test(name));
  const source = readme ? readText(join(folder, readme)) : null;
  if (!source) return null;
  return { description: description.trim(), text: normalizeText(source.replace(/\r\n?/g, '\n')) };
}

// ---------------------------------------------------------------------------------------------------------------

function candidatesOf(source: CorpusSource): { root: string; paths: string[]; read: typeof manPage } {
  switch (source) {
    case 'man':
      return { root: MAN_ROOT, paths: manCandidates(), read: manPage };
    case 'doc':
      return { root: DOC_ROOT, paths: docCandidates(), read: docPage };
    case 'npm':
      return { root: NPM_ROOT, paths: npmCandidates(), read: npmPage };
  }
}

/**
 * Up to `options.pages` pages of one source. The sorted candidates, at most `perFamily` per family, are visited in an
 * even stride (offset 0, then offset 1, …) so that the pages spread over sections and the alphabet; a candidate
 * is skipped when it is an alias, has no usable description, is too short, or repeats a description or a text.
 */
export function selectPages(source: CorpusSource, options: CorpusOptions): CorpusPage[] {
  const { root, paths, read } = candidatesOf(source);
  const perFamily = new Map<string, number>();
  const capped = paths.filter((path) => {
    const family = familyOf(source, path);
    const count = perFamily.get(family) ?? 0;
    perFamily.set(family, count + 1);
    return count < options.perFamily;
  });
  const stride = Math.max(1, Math.floor(capped.length / options.pages));
  const pages: CorpusPage[] = [];
  const seen = new Set<string>();
  for (let offset = 0; offset < stride && pages.length < options.pages; offset++) {
    for (let i = offset; i < capped.length && pages.length < options.pages; i += stride) {
      const page = read(capped[i]);
      if (!page || page.text.length < MIN_TEXT_CHARS) continue;
      const description = page.description.replace(/\s+/g, ' ');
      const words = description.split(' ').length;
      // A backslash is roff the crude stripping left behind.
      if (words < MIN_DESCRIPTION_WORDS || words > MAX_DESCRIPTION_WORDS || description.includes('\\')) continue;
      const text = (options.withoutDescription ? removePhrase(page.text, description) : page.text).slice(
        0,
        options.maxPageChars,
      );
      const descriptionKey = `d:${description.toLowerCase()}`;
      const textKey = `t:${text.slice(0, 2000)}`;
      if (seen.has(descriptionKey) || seen.has(textKey)) continue;
      seen.add(descriptionKey);
      seen.add(textKey);
      pages.push({ id: capped[i].slice(root.length + 1), description, text });
    }
  }
  return pages;
}

/** `text` without any occurrence of `phrase`, whatever the whitespace between its words. */
function removePhrase(text: string, phrase: string): string {
  const words = phrase.split(' ').map((word) => word.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  return text.replace(new RegExp(words.join('\\s+'), 'gi'), ' ');
}

/** The corpus of the first source that has enough pages on this machine; fails loudly when none has. */
export function loadCorpus(options: CorpusOptions): Corpus {
  const sources = options.sources ?? ['man', 'doc', 'npm'];
  const minimum = options.minimumPages ?? options.pages;
  const found: string[] = [];
  for (const source of sources) {
    const pages = selectPages(source, options);
    if (pages.length >= minimum) return { source, pages };
    found.push(`${source}: ${pages.length}`);
  }
  throw new Error(`No text corpus of ${minimum} pages on this machine (${found.join(', ')})`);
}

/**
 * A chunk-sized text made of lines drawn at random from `lines` (each cut at `maxChars`), joined by newlines while
 * they fit in `maxChars` (one line at least): filler that reads like the corpus, for knowledge bases of 100k chunks.
 */
export function recombinedText(lines: readonly string[], random: () => number, maxChars = 1000): string {
  const parts: string[] = [];
  for (let length = 0; ; ) {
    const line = lines[Math.floor(random() * lines.length)].slice(0, maxChars);
    if (parts.length > 0 && length + 1 + line.length > maxChars) break;
    parts.push(line);
    length += line.length + 1;
  }
  return parts.join('\n');
}

/** `count` queries spread evenly over the pages: each page's description, answered by that page. */
export function corpusQueries(corpus: Corpus, count: number): CorpusQuery[] {
  const { pages } = corpus;
  const wanted = Math.min(count, pages.length);
  return Array.from({ length: wanted }, (_, j) => {
    const page = pages[Math.floor((j * pages.length) / wanted)];
    return { text: page.description, pageId: page.id };
  });
}

// ---------------------------------------------------------------------------------------------------------------
// The baseline: plain Okapi BM25 over the same chunks, in memory.

/** Lowercased runs of letters and digits: no stemming, no stop words. */
export function simpleTokens(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

export interface Bm25Hit {
  readonly key: number;
  readonly score: number;
}

/**
 * Okapi BM25 (k1 1.2, b 0.75) with the non-negative idf ln(1 + (N - n + 0.5) / (n + 0.5)) of Lucene, so a term in
 * more than half the chunks still counts a little rather than against. An inverted index of term → postings.
 */
export class Bm25 {
  private readonly postings = new Map<string, { key: number; tf: number }[]>();
  private readonly lengths: number[] = [];
  private totalLength = 0;

  constructor(
    private readonly tokenize: (text: string) => string[] = simpleTokens,
    private readonly k1 = 1.2,
    private readonly b = 0.75,
  ) {}

  /** Adds a text; its key is its insertion order, returned. */
  add(text: string): number {
    const key = this.lengths.length;
    const counts = new Map<string, number>();
    const tokens = this.tokenize(text);
    for (const token of tokens) counts.set(token, (counts.get(token) ?? 0) + 1);
    for (const [token, tf] of counts) {
      let list = this.postings.get(token);
      if (!list) {
        list = [];
        this.postings.set(token, list);
      }
      list.push({ key, tf });
    }
    this.lengths.push(tokens.length);
    this.totalLength += tokens.length;
    return key;
  }

  search(query: string, limit: number): Bm25Hit[] {
    const n = this.lengths.length;
    if (n === 0) return [];
    const averageLength = this.totalLength / n;
    const scores = new Map<number, number>();
    for (const term of new Set(this.tokenize(query))) {
      const list = this.postings.get(term);
      if (!list) continue;
      const idf = Math.log(1 + (n - list.length + 0.5) / (list.length + 0.5));
      for (const { key, tf } of list) {
        const norm = this.k1 * (1 - this.b + (this.b * this.lengths[key]) / averageLength);
        scores.set(key, (scores.get(key) ?? 0) + (idf * tf * (this.k1 + 1)) / (tf + norm));
      }
    }
    return [...scores]
      .map(([key, score]) => ({ key, score }))
      .sort((x, y) => y.score - x.score || x.key - y.key)
      .slice(0, limit);
  }
}

// ---------------------------------------------------------------------------------------------------------------

/**
 * `index.refreshIndex()` until every row is in the BM25 index. A refresh can be preempted: the background refresh it
 * waits for may schedule another on finishing, which then runs beside it (a commit conflict); the next attempt,
 * after that one, succeeds.
 */
export async function refreshIndexFully(
  index: Pick<LanceKnowledgeIndex, 'refreshIndex' | 'indexStatus'>,
  attempts = 4,
): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await index.refreshIndex();
      if ((await index.indexStatus()).unindexedRows === 0) return;
    } catch (error) {
      if (attempt >= attempts || !/commit conflict|preempted/i.test(String(error))) throw error;
      continue;
    }
    if (attempt >= attempts) throw new Error(`rows still outside the BM25 index after ${attempts} refreshes`);
  }
}
