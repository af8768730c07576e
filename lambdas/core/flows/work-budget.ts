/**
 * The flow work budget of an organization (issue 33, "Limits where the money is"; docs/rate-limits.md, "Flow work"):
 * the rate limits count requests, this counts what the flows of those requests do. Every node a run executes costs
 * 1 unit, a browser task also `browserSecondUnits` per started second of its run. Counted as the rate limits are, in
 * fixed windows of `burst / perSecond` seconds in the same counters (key `work#<organizationId>`, one count a window).
 *
 * Primary course: an invocation pays for its first node before anything is written (refused: 429 RATE_LIMITED with
 * Retry-After); each further node is paid before it starts; a browser task's seconds are charged when it ends (it is
 * never cut short: the next node pays). A node the budget refuses does not fail the run: it is handed over to the
 * flow runner with a delay until the window ends (core/flows/runtime.ts, `execute`).
 */
import { fixedWindow, RateLimitedError, type RateLimitSettings, type RateLimitVerdict } from '#core/auth/rate-limit';
import type { RateLimitCounters } from '#ports/rate-limits';

export interface FlowWorkSettings extends RateLimitSettings {
  /** Units a second, sustained (FLOW_WORK_PER_SECOND). */
  readonly perSecond: number;
  /** Units one window takes (FLOW_WORK_BURST); the window lasts burst / perSecond seconds. */
  readonly burst: number;
  /** Units per started second of a browser task (BROWSER_SECOND_UNITS). */
  readonly browserSecondUnits: number;
}

/**
 * 500 units a second, 1,000 in a 2 s window (the requests' window): an organization at its request limit (100 requests
 * every 2 s) running flows of up to 10 nodes is never refused. A browser second holds a 2,048 MB function, four times
 * a flow function's memory, for a whole second where most nodes take a fraction of one: 10 units. At the defaults an
 * organization keeps about 50 browser tasks running at once, or runs 500 nodes a second.
 */
export const DEFAULT_FLOW_WORK: FlowWorkSettings = { perSecond: 500, burst: 1_000, browserSecondUnits: 10 };

/** What the runtime counts flow work with (FlowRuntimeDeps.work): the counters and the settings. */
export interface FlowWorkBudget {
  readonly counters: RateLimitCounters;
  readonly settings: FlowWorkSettings;
}

/** The organization's flow work budget is used up for this window. 429 RATE_LIMITED, Retry-After: until it ends. */
export class FlowWorkExhaustedError extends RateLimitedError {
  constructor(verdict: RateLimitVerdict, settings: FlowWorkSettings) {
    super(verdict, `${workBudgetText(verdict, settings)}; retry in ${verdict.resetSeconds} s`);
  }
}

/** The budget in words, for the answers and failures that name it. */
export function workBudgetText(verdict: RateLimitVerdict, settings: FlowWorkSettings): string {
  return (
    `The flow work budget of this organization is used up: at most ${verdict.limit} units every ` +
    `${verdict.windowSeconds} s (a node 1, a browser second ${settings.browserSecondUnits})`
  );
}

/** Counts `units` of flow work against the organization; the verdict says whether this window still had room. */
export async function spendFlowWork(
  budget: FlowWorkBudget,
  organizationId: string,
  units: number,
  nowMs: number,
): Promise<RateLimitVerdict> {
  const { window, expiresAtEpoch, verdict } = fixedWindow(budget.settings, nowMs);
  return verdict(await budget.counters.hit(`work#${organizationId}`, window, expiresAtEpoch, units));
}

/** A browser task's cost: `browserSecondUnits` per started second it ran. */
export function browserTaskUnits(settings: FlowWorkSettings, ranMs: number): number {
  return Math.ceil(Math.max(0, ranMs) / 1000) * settings.browserSecondUnits;
}
