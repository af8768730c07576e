/**
 * The `offset` of POST /api/v1/events/agent without counting every skipped entry each time: a per-process cache of
 * rank marks over the settled part of each index partition, optionally shared between processes (docs/analytics.md,
 * "offset").
 *
 * DynamoDB cannot jump to the n-th entry of a key range; counting N entries reads N entries (Select COUNT ships
 * none, but reads the same units). What makes a cache exact here:
 * - positions only grow: a write takes created_at = the time of its id reservation, and the writer gives up a
 *   reservation older than WRITE_WINDOW_MS (DynamoAnalyticsStore.write), so no entry ever lands with a created_at
 *   older than now - SETTLE_MS. Below the `root` (a minute boundary at or before now - SETTLE_MS) an index
 *   partition is settled: no entry is added there any more;
 * - nothing deletes events but TTL, and TTL only deletes expired ones: a mark counts only entries that stay live
 *   until its `validUntil` (a page with an entry expiring sooner is not marked), and is dropped at `validUntil`.
 * A chain of marks, per index partition: entries below the root, each with its key and its rank (how many entries
 * lie between it and the root). The first skip to a depth counts as before (pages of up to 1 MB) and marks each
 * page's end and the target; a skip between two marks counts RANK_STEP entries a Query and marks them, so later
 * ones count fewer than RANK_STEP from the mark before them. What lies above the root (the last minutes) is counted
 * on every query, as before.
 * With `shared` (analytics-marks.ts), the chains outlive the process: a process's first deep offset in a partition
 * reads the chain other processes wrote (one GetItem), and a skip that changed the chain writes it back (one
 * conditional PutItem, never over a version it has not seen: on a lost race, the next skip reads and merges first).
 * Neither can fail a query: a read or write that fails costs counting, as without them.
 */

/** A write gives up its id reservation when it is older than this (it fails; the caller's retry takes fresh ids). */
export const WRITE_WINDOW_MS = 60_000;
/** Below now - SETTLE_MS no entry can appear any more: the write window plus 9 minutes for a request in flight. */
export const SETTLE_MS = 10 * 60_000;
/** Marks count entries that stay live this long; the chain is dropped after it. */
const VALID_FOR_SECONDS = 86_400;
const MINUTE_MS = 60_000;

export type StartKey = Record<string, unknown>;

/** One Query with Select COUNT on the partition: `expiresAt > liveAfter`, newest first. */
export interface CountRequest {
  /** Inclusive key bounds on `position`. */
  readonly lower?: string;
  readonly upper?: string;
  readonly startKey?: StartKey;
  readonly limit?: number;
  /** Epoch seconds: entries with expiresAt at or before it are not counted. */
  readonly liveAfter: number;
}

export interface CountPage {
  /** Entries matched by the filter. */
  readonly count: number;
  /** Entries evaluated (before the filter). */
  readonly scanned: number;
  readonly lastKey?: StartKey;
}

export type Counter = (request: CountRequest) => Promise<CountPage>;

export interface Mark {
  readonly key: StartKey;
  readonly position: string;
  /** Entries from the root down to this one, this one included. */
  readonly rank: number;
}

/** The marks of one index partition below `root` (a minute boundary, ISO 8601). */
export interface Chain {
  readonly root: string;
  /** Newest first: positions descending, ranks ascending. */
  readonly marks: readonly Mark[];
  /** The marks reach the partition's end: `total` entries below the root. */
  readonly total?: number;
  /** A page below the last mark holds an entry that expires before validUntil: the chain ends there. */
  readonly frozen?: boolean;
  /** Epoch seconds. */
  readonly validUntil: number;
}

export interface OffsetIndexOptions {
  /** Entries between two marks, once a skip has counted between them. Default 1,000. */
  readonly rankStep?: number;
  /** Offsets below this are counted as before (they cost at most that many entries). Default 1,000. */
  readonly minOffset?: number;
  /** Partitions whose chains are kept (the least recently used goes). Default 100. */
  readonly maxPartitions?: number;
  /** Marks per chain at most (1,000 = a million entries at the default step). */
  readonly maxMarks?: number;
  /**
   * Where processes share their chains (analytics-marks.ts: an item per partition in the analytics table): read on a
   * process's first deep offset of a partition, written once a skip changed the chain. Without it, marks stay in
   * the process.
   */
  readonly shared?: SharedMarks;
}

/**
 * The chains of other processes. `version` is that of the stored item (undefined: none, or one not to be trusted);
 * `write` replaces it only if it is still at `version` and answers the new version, or 'conflict' when another process
 * wrote meanwhile. Errors are the caller's to swallow: a mark is an optimization, never the answer.
 */
export interface SharedMarks {
  read(partition: string): Promise<{ chain?: Chain; version?: number }>;
  write(partition: string, chain: Chain, version: number | undefined): Promise<number | 'conflict'>;
}

/** What a skip starts from: the process's chain (if any) and the shared chain it was read or written as. */
interface Known extends Partial<Entry> {
  readonly shared?: Chain;
}

/** What a process keeps per partition: its chain and what it knows of the shared one. */
interface Entry {
  readonly chain: Chain;
  /** The shared item's version this chain includes (undefined: no item, or one ignored). */
  readonly version?: number;
  /** The shared item changed without this process seeing it (a write lost a race, a read failed): read it first. */
  readonly reread?: boolean;
}

/** What skips an offset: OffsetIndex (the marks), handed to the store of the query's function. */
export interface OffsetSkipper {
  skip(
    partition: string,
    range: { lower?: string; upper?: string },
    offset: number,
    now: Date,
    count: Counter,
  ): Promise<SkipResult>;
}

export type SkipResult = { readonly startKey?: StartKey } | 'end';

/** `p` > `u` for every position p: positions are fixed-width, so anything appended to `u` sorts right above it. */
const justAbove = (position: string) => `${position}~`;
const positionOf = (key: StartKey) => key.position as string;

function minuteFloor(ms: number): string {
  return new Date(Math.floor(ms / MINUTE_MS) * MINUTE_MS).toISOString();
}

/** Index of the last mark whose rank is at most `rank` (-1 if none). */
function lastMarkAtOrBelow(marks: readonly Mark[], rank: number): number {
  let lo = 0;
  let hi = marks.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (marks[mid].rank <= rank) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}

/** Index of the last mark whose position is above `position` (-1 if none). */
function lastMarkAbove(marks: readonly Mark[], position: string): number {
  let lo = 0;
  let hi = marks.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (marks[mid].position > position) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}

export class OffsetIndex {
  private readonly chains = new Map<string, Entry>();
  private readonly shared?: SharedMarks;
  private readonly rankStep: number;
  private readonly minOffset: number;
  private readonly maxPartitions: number;
  private readonly maxMarks: number;

  constructor(options: OffsetIndexOptions = {}) {
    this.rankStep = options.rankStep ?? 1000;
    this.minOffset = options.minOffset ?? 1000;
    this.maxPartitions = options.maxPartitions ?? 100;
    this.maxMarks = options.maxMarks ?? 1000;
    this.shared = options.shared;
  }

  /**
   * The key after which the page starts once `offset` live entries within [lower, upper] (newest first) are
   * skipped; 'end' when fewer remain. `partition` names the index partition (index and key value).
   */
  async skip(
    partition: string,
    range: { lower?: string; upper?: string },
    offset: number,
    now: Date,
    count: Counter,
  ): Promise<SkipResult> {
    if (offset === 0) return {};
    const nowSeconds = Math.floor(now.getTime() / 1000);
    const root = minuteFloor(now.getTime() - SETTLE_MS);
    if (offset < this.minOffset || (range.lower !== undefined && range.lower >= root)) {
      return skipped(await countFrom(count, { ...range, liveAfter: nowSeconds }, offset));
    }

    // Above the root (the last minutes, where writes still land): counted every time.
    let remaining = offset;
    if (range.upper === undefined || range.upper >= root) {
      const above = await countFrom(count, { lower: root, upper: range.upper, liveAfter: nowSeconds }, remaining);
      if (above.remaining === 0) return { startKey: above.startKey };
      remaining = above.remaining;
    }

    const cached = this.chains.get(partition);
    const usable = (candidate?: Chain) =>
      candidate && nowSeconds < candidate.validUntil && candidate.root <= root ? candidate : undefined;
    const known = await this.known(partition, cached, usable);
    let chain = usable(known.chain);
    if (chain && chain.root < root) chain = await this.reroot(chain, root, remaining, nowSeconds, count);
    chain ??= { root, marks: [], validUntil: nowSeconds + VALID_FOR_SECONDS };
    const save = (made: Chain, result: SkipResult) => this.save(partition, cached, known, made, result);

    // Entries of the chain above `upper`, when the range starts inside it.
    let above = 0;
    if (range.upper !== undefined && range.upper < root) {
      const last = chain.marks[chain.marks.length - 1];
      if (chain.total === undefined && (!last || range.upper < last.position)) {
        // Below what the chain covers: counting down to it would cost more than the offset itself.
        const counted = await countFrom(count, { ...range, liveAfter: nowSeconds }, offset);
        return save(chain, skipped(counted));
      }
      const mark = lastMarkAbove(chain.marks, range.upper);
      const between = await countAll(count, {
        lower: justAbove(range.upper),
        upper: mark < 0 ? root : undefined,
        startKey: mark < 0 ? undefined : chain.marks[mark].key,
        liveAfter: nowSeconds,
      });
      above = (mark < 0 ? 0 : chain.marks[mark].rank) + between;
    }

    const target = above + remaining;
    const extended = await this.extend(chain, target, range.lower, nowSeconds, count);
    chain = extended.chain;
    if (extended.passedLower || (chain.total !== undefined && target >= chain.total)) {
      return save(chain, 'end');
    }
    const found = await this.between(chain, target, range.lower, nowSeconds, count);
    chain = found.chain;
    let result = found.result;
    if (result !== 'end' && result.startKey && range.lower !== undefined) {
      if (positionOf(result.startKey) < range.lower) result = 'end';
    }
    return save(chain, result);
  }

  /**
   * From the mark at or before rank `target` to it. Between two marks, the entries are counted RANK_STEP a Query
   * and marked on the way, so the next offset there counts fewer than RANK_STEP; past the chain's last mark (a chain
   * stopped by an expiring entry), counted as they are.
   */
  private async between(
    chain: Chain,
    target: number,
    lower: string | undefined,
    nowSeconds: number,
    count: Counter,
  ): Promise<{ chain: Chain; result: SkipResult }> {
    const at = lastMarkAtOrBelow(chain.marks, target);
    let from: Mark | undefined = at < 0 ? undefined : chain.marks[at];
    if ((from?.rank ?? 0) === target) return { chain, result: from ? { startKey: from.key } : {} };
    const request = { lower, upper: from ? undefined : chain.root, startKey: from?.key, liveAfter: nowSeconds };
    if (at + 1 >= chain.marks.length)
      return { chain, result: skipped(await countFrom(count, request, target - (from?.rank ?? 0))) };
    const added: Mark[] = [];
    let startKey = from?.key;
    while ((from?.rank ?? 0) < target) {
      const page = await count({ ...request, startKey, limit: Math.min(this.rankStep, target - (from?.rank ?? 0)) });
      // Entries between two marks stay live until the chain's end: a page short of that is counted, not marked.
      if (!page.lastKey || page.count < page.scanned) {
        const rest = await countFrom(count, { ...request, startKey }, target - (from?.rank ?? 0));
        return { chain, result: skipped(rest) };
      }
      startKey = page.lastKey;
      from = { key: startKey, position: positionOf(startKey), rank: (from?.rank ?? 0) + page.count };
      added.push(from);
    }
    const marks = [...chain.marks.slice(0, at + 1), ...added, ...chain.marks.slice(at + 1)];
    return { chain: { ...chain, marks: marks.slice(0, this.maxMarks) }, result: { startKey } };
  }

  /**
   * What the process knows of a partition: its own entry, or (on its first deep offset there, or after the shared
   * item changed under it) its chain merged with the shared one, read once. `shared`: the chain as the shared item
   * holds it at `version`, to know whether a skip changed it.
   */
  private async known(
    partition: string,
    cached: Entry | undefined,
    usable: (chain?: Chain) => Chain | undefined,
  ): Promise<Known> {
    if (!this.shared || (cached && !cached.reread)) return { ...cached, shared: cached?.chain };
    let read: Awaited<ReturnType<SharedMarks['read']>>;
    try {
      read = await this.shared.read(partition);
    } catch {
      // Counted as without the shared marks; read again next time, and not written over meanwhile.
      return { chain: cached?.chain, reread: true };
    }
    const ours = usable(cached?.chain);
    const theirs = usable(read.chain);
    const chain = ours && theirs ? mergeChains(ours, theirs) : (ours ?? theirs);
    return { chain, version: read.version, shared: read.chain };
  }

  /**
   * Keeps the new chain unless another query replaced the cached one meanwhile; the least recently used goes. A
   * chain that changed is shared (one conditional write); a write that fails leaves the answer as it is.
   */
  private async save(
    partition: string,
    cached: Entry | undefined,
    known: Known,
    chain: Chain,
    result: SkipResult,
  ): Promise<SkipResult> {
    const keep = chain.marks.length > 0 || chain.total !== undefined;
    let entry: Entry = { chain, version: known.version, reread: known.reread };
    if (this.shared && keep && !known.reread && !(known.shared && sameChain(known.shared, chain))) {
      try {
        const written = await this.shared.write(partition, chain, known.version);
        entry = written === 'conflict' ? { chain, reread: true } : { chain, version: written };
      } catch {
        entry = { chain, reread: true };
      }
    }
    if (this.chains.get(partition) === cached) {
      this.chains.delete(partition);
      if (keep) this.chains.set(partition, entry);
      if (this.chains.size > this.maxPartitions) this.chains.delete(this.chains.keys().next().value as string);
    }
    return result;
  }

  /**
   * Marks down to rank `target` (or the end, or an expiring page): counted as a plain skip would (pages of up to
   * 1 MB), a mark at each page's end, the last one at `target` itself. Not below `lower` (the query's startDate):
   * `passedLower` when the target lies below it.
   */
  private async extend(
    chain: Chain,
    target: number,
    lower: string | undefined,
    nowSeconds: number,
    count: Counter,
  ): Promise<{ chain: Chain; passedLower?: boolean }> {
    const marks = [...chain.marks];
    let last = marks[marks.length - 1];
    if (chain.total !== undefined || chain.frozen || (last?.rank ?? 0) >= target) return { chain };
    let validUntil = chain.validUntil;
    const liveAfter = nowSeconds + VALID_FOR_SECONDS;
    while ((last?.rank ?? 0) < target && marks.length < this.maxMarks) {
      const page = await count({
        lower,
        upper: last ? undefined : chain.root,
        startKey: last?.key,
        limit: target - (last?.rank ?? 0),
        liveAfter,
      });
      if (page.count < page.scanned) return { chain: { ...chain, marks, frozen: true, validUntil } };
      validUntil = Math.min(validUntil, liveAfter);
      const rank = (last?.rank ?? 0) + page.scanned;
      if (!page.lastKey) {
        if (lower !== undefined) return { chain: { ...chain, marks, validUntil }, passedLower: true };
        return { chain: { ...chain, marks, total: rank, validUntil } };
      }
      last = { key: page.lastKey, position: positionOf(page.lastKey), rank };
      marks.push(last);
    }
    return { chain: { ...chain, marks, validUntil } };
  }

  /**
   * The chain of a later root: the entries settled since the old root are counted (RANK_STEP a Query) and marked,
   * and the old marks follow, shifted by their number. A page with an expiring entry, or more entries than the skip
   * at hand (`budget`: a new chain would cost less), starts over (undefined).
   */
  private async reroot(
    chain: Chain,
    root: string,
    budget: number,
    nowSeconds: number,
    count: Counter,
  ): Promise<Chain | undefined> {
    const liveAfter = nowSeconds + VALID_FOR_SECONDS;
    const marks: Mark[] = [];
    let rank = 0;
    let startKey: StartKey | undefined;
    for (;;) {
      const page = await count({ lower: chain.root, upper: root, startKey, limit: this.rankStep, liveAfter });
      if (page.count < page.scanned) return undefined;
      rank += page.scanned;
      if (!page.lastKey) break;
      // More settled since than this skip needs: a new chain costs less than moving the old one up.
      if (marks.length >= this.maxMarks || rank > budget) return undefined;
      startKey = page.lastKey;
      marks.push({ key: startKey, position: positionOf(startKey), rank });
    }
    const shifted = chain.marks.map((mark) => ({ ...mark, rank: mark.rank + rank }));
    return {
      root,
      marks: [...marks, ...shifted].slice(0, this.maxMarks),
      total: chain.total === undefined ? undefined : chain.total + rank,
      frozen: chain.frozen,
      validUntil: Math.min(chain.validUntil, liveAfter),
    };
  }
}

/**
 * Counts `offset` live entries from `request` on, newest first. `remaining` 0: `startKey` is the key of the last one
 * (the request's own when `offset` is 0); above 0: the range ended with that many still to skip.
 */
async function countFrom(
  count: Counter,
  request: CountRequest,
  offset: number,
): Promise<{ startKey?: StartKey; remaining: number }> {
  let remaining = offset;
  let startKey = request.startKey;
  while (remaining > 0) {
    // Limit bounds the entries evaluated; the filter then drops expired ones, so the loop counts again.
    const page = await count({ ...request, startKey, limit: remaining });
    remaining -= page.count;
    if (!page.lastKey) {
      // A page that reaches its Limit has a LastEvaluatedKey (DynamoDB and dynalite alike).
      if (remaining === 0) throw new Error('analytics: a count reached its limit without a LastEvaluatedKey');
      return { remaining };
    }
    startKey = page.lastKey;
  }
  return { startKey, remaining };
}

function skipped(counted: { startKey?: StartKey; remaining: number }): SkipResult {
  return counted.remaining > 0 ? 'end' : { startKey: counted.startKey };
}

/** Every live entry from `request` on. */
async function countAll(count: Counter, request: CountRequest): Promise<number> {
  let total = 0;
  let startKey = request.startKey;
  do {
    const page = await count({ ...request, startKey });
    total += page.count;
    startKey = page.lastKey;
  } while (startKey);
  return total;
}

/** Same root, marks, end and freeze: nothing new to share. */
function sameChain(a: Chain, b: Chain): boolean {
  return (
    a.root === b.root &&
    a.total === b.total &&
    a.frozen === b.frozen &&
    a.marks.length === b.marks.length &&
    a.marks.every((mark, i) => mark.position === b.marks[i].position && mark.rank === b.marks[i].rank)
  );
}

/**
 * Two chains of one partition. From the same root, both count the same entries (none is added below the root, none
 * of theirs is deleted before either chain's validUntil), so a position has one rank in both: their union, valid
 * as long as both are. From different roots, the later root (the other would be moved up by counting).
 */
export function mergeChains(ours: Chain, theirs: Chain): Chain {
  if (ours.root !== theirs.root) return ours.root > theirs.root ? ours : theirs;
  const byPosition = new Map<string, Mark>();
  for (const mark of [...ours.marks, ...theirs.marks]) {
    const same = byPosition.get(mark.position);
    // One rank per position from one root; two that disagree mean one is wrong: keep ours alone.
    if (same && same.rank !== mark.rank) return ours;
    byPosition.set(mark.position, mark);
  }
  const marks = [...byPosition.values()].sort((a, b) => (a.position > b.position ? -1 : 1));
  if (marks.some((mark, i) => i > 0 && mark.rank <= marks[i - 1].rank)) return ours;
  const deeper = (ours.marks.at(-1)?.rank ?? 0) >= (theirs.marks.at(-1)?.rank ?? 0) ? ours : theirs;
  return {
    root: ours.root,
    marks,
    total: ours.total ?? theirs.total,
    frozen: deeper.frozen,
    validUntil: Math.min(ours.validUntil, theirs.validUntil),
  };
}
