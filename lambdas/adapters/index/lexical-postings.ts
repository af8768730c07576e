/**
 * The inverted form of one dataset's lexical index, in memory (docs/retrieval.md, "Scores"): for each term the chunks
 * that contain it and how often, so that a query scores exactly the chunks holding one of its terms, every one of
 * them, with the lexical score of lexical-score.ts. It follows the store's generations (lexical-store.ts): a query
 * first reloads the documents written since the generation it holds.
 *
 * A chunk is a slot; a document's new chunks take new slots and its old ones are marked dead, skipped by queries, and
 * dropped when dead slots outnumber live ones (the slots are then renumbered and every posting list rewritten).
 */
import type { IndexFilter } from '#ports/processing';
import { scoreOfSum, termValue, type WeightedQuery } from './lexical-score';
import { type ChunkTerms, forEachTermPair, type LexicalStore } from './lexical-store';

/** A scored chunk: its document and position (the store's key of its fields). */
export interface PostingHit {
  readonly document: string;
  readonly position: number;
  readonly score: number;
}

/** Compaction waits for at least this many dead slots. */
const MIN_DEAD_TO_COMPACT = 1024;

/** One term's posting list: slots in increasing order of when they were added, and the term's count in each. */
interface Postings {
  slots: Int32Array;
  counts: Uint16Array;
  size: number;
}

export class LexicalPostings {
  /** The store generation this holds (-1: nothing loaded yet). */
  private generation = -1;
  private size = 0;
  private dead = 0;
  private documents: string[] = [];
  private positions = new Int32Array(1024);
  private lengths = new Int32Array(1024);
  private alive = new Uint8Array(1024);
  private labels1: (string | null)[] = [];
  private labels2: (string | null)[] = [];
  private readonly slotsByDocument = new Map<string, number[]>();
  /** The dataset's term ids (lexical-store.ts gives them), and the posting list of each id. */
  private readonly termIds = new Map<string, number>();
  private postings: (Postings | undefined)[] = [];
  /** Per-query scratch, as long as the slots: the sum of each touched slot, and which were touched. */
  private sums = new Float64Array(0);
  private touched = new Int32Array(0);

  constructor(
    private readonly store: LexicalStore,
    private readonly dataset: string,
  ) {}

  /** Live chunks held. */
  get chunkCount(): number {
    return this.size - this.dead;
  }

  /** Reloads what the store changed since the generation held. */
  sync(): void {
    const { generation, terms, documents } = this.store.changesSince(this.dataset, this.generation, this.termIds.size);
    if (generation === this.generation) return;
    for (const { term, id, chunks } of terms) {
      this.termIds.set(term, id);
      // Sized for the chunks holding it now, so that a first load does not grow the list again and again.
      const capacity = Math.max(4, chunks);
      this.postings[id] ??= { slots: new Int32Array(capacity), counts: new Uint16Array(capacity), size: 0 };
    }
    for (const [document, chunks] of documents) {
      this.removeDocument(document);
      for (const chunk of chunks) this.addChunk(chunk);
    }
    this.generation = generation;
    if (this.dead >= MIN_DEAD_TO_COMPACT && this.dead > this.size - this.dead) this.compact();
  }

  /**
   * The `limit` best chunks for `query` that pass every filter, best first (score, then document, then position),
   * scores above 0 only. Exact: every chunk holding a query term is scored.
   */
  top(query: WeightedQuery, limit: number, filters: readonly IndexFilter[]): PostingHit[] {
    if (limit <= 0 || query.totalWeight <= 0) return [];
    if (this.sums.length < this.size) {
      this.sums = new Float64Array(this.positions.length);
      this.touched = new Int32Array(this.positions.length);
    }
    const { sums, touched, alive, lengths } = this;
    let touchedCount = 0;
    // Term at a time, in the query's order of terms: each slot's sum is added up as lexicalScoreOf adds it.
    for (let t = 0; t < query.terms.length; t++) {
      const id = this.termIds.get(query.terms[t]);
      const list = id === undefined ? undefined : this.postings[id];
      if (!list) continue;
      const weight = query.weights[t];
      const { slots, counts, size } = list;
      for (let i = 0; i < size; i++) {
        const slot = slots[i];
        if (alive[slot] === 0) continue;
        if (sums[slot] === 0) touched[touchedCount++] = slot;
        sums[slot] += weight * termValue(counts[i], lengths[slot]);
      }
    }
    const best: PostingHit[] = [];
    for (let i = 0; i < touchedCount; i++) {
      const slot = touched[i];
      const sum = sums[slot];
      sums[slot] = 0;
      const score = scoreOfSum(sum, query.totalWeight, this.positions[slot]);
      if (score <= 0) continue;
      const hit = { document: this.documents[slot], position: this.positions[slot], score };
      if (best.length === limit && compareHits(hit, best[limit - 1]) >= 0) continue;
      if (!passes(filters, this.labels1[slot], this.labels2[slot])) continue;
      insertSorted(best, hit, limit);
    }
    return best;
  }

  private removeDocument(document: string): void {
    const slots = this.slotsByDocument.get(document);
    if (!slots) return;
    for (const slot of slots) this.alive[slot] = 0;
    this.dead += slots.length;
    this.slotsByDocument.delete(document);
  }

  private addChunk(chunk: ChunkTerms): void {
    if (this.size === this.positions.length) this.growSlots();
    const slot = this.size++;
    this.documents[slot] = chunk.document;
    this.positions[slot] = chunk.position;
    this.lengths[slot] = chunk.length;
    this.alive[slot] = 1;
    this.labels1[slot] = chunk.label1;
    this.labels2[slot] = chunk.label2;
    const slots = this.slotsByDocument.get(chunk.document);
    if (slots) slots.push(slot);
    else this.slotsByDocument.set(chunk.document, [slot]);
    forEachTermPair(chunk.terms, (id, count) => this.addPosting(id, slot, Math.min(count, 0xffff)));
  }

  private addPosting(id: number, slot: number, count: number): void {
    let list = this.postings[id];
    if (!list) {
      list = { slots: new Int32Array(4), counts: new Uint16Array(4), size: 0 };
      this.postings[id] = list;
    } else if (list.size === list.slots.length) {
      const slots = new Int32Array(list.size * 2);
      slots.set(list.slots);
      const counts = new Uint16Array(list.size * 2);
      counts.set(list.counts);
      list.slots = slots;
      list.counts = counts;
    }
    list.slots[list.size] = slot;
    list.counts[list.size] = count;
    list.size++;
  }

  private growSlots(): void {
    const capacity = this.positions.length * 2;
    const grow = <T extends Int32Array | Uint8Array>(array: T, make: (n: number) => T): T => {
      const grown = make(capacity);
      grown.set(array);
      return grown;
    };
    this.positions = grow(this.positions, (n) => new Int32Array(n));
    this.lengths = grow(this.lengths, (n) => new Int32Array(n));
    this.alive = grow(this.alive, (n) => new Uint8Array(n));
  }

  /** Drops the dead slots: live ones are renumbered in order, and every posting list rewritten without the dead. */
  private compact(): void {
    const renumbered = new Int32Array(this.size).fill(-1);
    let next = 0;
    for (let slot = 0; slot < this.size; slot++) {
      if (this.alive[slot] === 0) continue;
      renumbered[slot] = next;
      this.documents[next] = this.documents[slot];
      this.positions[next] = this.positions[slot];
      this.lengths[next] = this.lengths[slot];
      this.alive[next] = 1;
      this.labels1[next] = this.labels1[slot];
      this.labels2[next] = this.labels2[slot];
      next++;
    }
    this.documents.length = next;
    this.labels1.length = next;
    this.labels2.length = next;
    this.alive.fill(0, next);
    this.size = next;
    this.dead = 0;
    for (const slots of this.slotsByDocument.values()) {
      for (let i = 0; i < slots.length; i++) slots[i] = renumbered[slots[i]];
    }
    this.postings.forEach((list, id) => {
      if (!list) return;
      let kept = 0;
      for (let i = 0; i < list.size; i++) {
        const slot = renumbered[list.slots[i]];
        if (slot < 0) continue;
        list.slots[kept] = slot;
        list.counts[kept] = list.counts[i];
        kept++;
      }
      if (kept === 0) this.postings[id] = undefined;
      else list.size = kept;
    });
  }
}

/** Best first: score, then document, then position (byScoreThenPosition's order for chunks of one dataset). */
function compareHits(a: PostingHit, b: PostingHit): number {
  return b.score - a.score || compareText(a.document, b.document) || a.position - b.position;
}

const compareText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Puts `hit` in its place in `best` (sorted), keeping at most `limit`. */
function insertSorted(best: PostingHit[], hit: PostingHit, limit: number): void {
  let at = best.length;
  while (at > 0 && compareHits(hit, best[at - 1]) < 0) at--;
  best.splice(at, 0, hit);
  if (best.length > limit) best.pop();
}

/**
 * Whether a chunk with these labels passes every filter, as the SQL of lancedb-sql.ts decides: `notEquals` also
 * passes a missing label, `greaterThan` / `lessThan` compare byte-wise (UTF-8, which orders as code points) and never
 * pass a missing label.
 */
export function passes(filters: readonly IndexFilter[], label1: string | null, label2: string | null): boolean {
  for (const filter of filters) {
    if (filter.key !== 'label1' && filter.key !== 'label2') throw new Error(`Cannot filter on "${filter.key}"`);
    const value = filter.key === 'label1' ? label1 : label2;
    switch (filter.operator) {
      case 'equals':
        if (value !== filter.value) return false;
        break;
      case 'notEquals':
        if (value === filter.value) return false;
        break;
      case 'greaterThan':
        if (value === null || compareCodePoints(value, filter.value) <= 0) return false;
        break;
      case 'lessThan':
        if (value === null || compareCodePoints(value, filter.value) >= 0) return false;
        break;
      default:
        throw new Error(`Unknown filter operator "${String(filter.operator)}"`);
    }
  }
  return true;
}

/** Code point order (UTF-8 byte order), where `<` on strings compares UTF-16 code units. */
function compareCodePoints(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.codePointAt(i) as number;
    const y = b.codePointAt(i) as number;
    if (x !== y) return x - y;
    if (x > 0xffff) i++;
  }
  return a.length - b.length;
}
