/**
 * The `offset` of POST /api/v1/events/agent without counting every skipped entry each time: a per-process cache of
 * rank marks over the settled part of each index partition (docs/analytics.md, "offset").
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

interface Mark {
  readonly key: StartKey;
  readonly position: string;
  /** Entries from the root down to this one, this one included. */
  readonly rank: number;
}

interface Chain {
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
  private readonly chains = new Map<string, Chain>();
  private readonly rankStep: number;
  private readonly minOffset: number;
  private readonly maxPartitions: number;
  private readonly maxMarks: number;

  constructor(options: OffsetIndexOptions = {}) {
    this.rankStep = options.rankStep ?? 1000;
    this.minOffset = options.minOffset ?? 1000;
    this.maxPartitions = options.maxPartitions ?? 100;
    this.maxMarks = options.maxMarks ?? 1000;
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
    let chain = cached;
    if (chain && (nowSeconds >= chain.validUntil || chain.root > root)) chain = undefined;
    if (chain && chain.root < root) chain = await this.reroot(chain, root, remaining, nowSeconds, count);
    chain ??= { root, marks: [], validUntil: nowSeconds + VALID_FOR_SECONDS };

    // Entries of the chain above `upper`, when the range starts inside it.
    let above = 0;
    if (range.upper !== undefined && range.upper < root) {
      const last = chain.marks[chain.marks.length - 1];
      if (chain.total === undefined && (!last || range.upper < last.position)) {
        // Below what the chain covers: counting down to it would cost more than the offset itself.
        const counted = await countFrom(count, { ...range, liveAfter: nowSeconds }, offset);
        return this.save(partition, cached, chain, skipped(counted));
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
      return this.save(partition, cached, chain, 'end');
    }
    const found = await this.between(chain, target, range.lower, nowSeconds, count);
    chain = found.chain;
    let result = found.result;
    if (result !== 'end' && result.startKey && range.lower !== undefined) {
      if (positionOf(result.startKey) < range.lower) result = 'end';
    }
    return this.save(partition, cached, chain, result);
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

  /** Keeps the new chain unless another query replaced the cached one meanwhile; the least recently used goes. */
  private save(partition: string, cached: Chain | undefined, chain: Chain, result: SkipResult): SkipResult {
    if (this.chains.get(partition) === cached) {
      this.chains.delete(partition);
      if (chain.marks.length > 0 || chain.total !== undefined) this.chains.set(partition, chain);
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
