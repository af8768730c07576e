/**
 * No regular expression of the service backtracks super-linearly (issue 22: a 281-byte upload once froze the
 * process for hours). Every regex written in `lambdas/` is found by the TypeScript parser and checked with recheck
 * (its native Linux binary); one that is vulnerable, or that recheck cannot decide, fails with its attack string.
 */
import { resolve } from 'node:path';
import { check } from 'recheck';
import { type RegexSource, regexSources } from '../../helpers/regex-sources';

const ROOT = resolve(__dirname, '..', '..', '..');
const sources = regexSources(ROOT);

describe('regular expressions in lambdas/', () => {
  it('are found: the literals and the RegExp constructors', () => {
    // A floor, so a broken finder cannot pass the check below by finding nothing.
    expect(sources.length).toBeGreaterThan(50);
    expect(sources.some((s) => s.where.startsWith('lambdas/core/flows/placeholders.ts') && s.flags === 'g')).toBe(true);
  });

  it('finds the vulnerable pattern this service once had (the checker works)', async () => {
    const old = await check(String.raw`^\s*(<!--[\s\S]*?-->\s*)*<(!doctype\s+html|html[\s>])`, 'i');
    expect(old.status).toBe('vulnerable');
  });

  it('are all linear-time', async () => {
    const problems: string[] = [];
    const checkOne = async ({ where, source, flags }: RegexSource) => {
      // The automaton checker decides exactly where it can; recheck's default picks its randomized fuzz checker for
      // patterns with counted repetitions (a UUID), which under load once called a linear pattern vulnerable.
      const exact = await check(source, flags, { timeout: 20_000, checker: 'automaton' });
      const result = exact.status === 'unknown' ? await check(source, flags, { timeout: 20_000 }) : exact;
      if (result.status === 'safe') return;
      const attack = result.status === 'vulnerable' ? ` attack: ${result.attack.pattern.slice(0, 80)}` : '';
      problems.push(`${where} /${source}/${flags}: ${result.status}${attack}`);
    };
    // Four at a time: each check runs in recheck's native process.
    for (let start = 0; start < sources.length; start += 4) {
      await Promise.all(sources.slice(start, start + 4).map(checkOne));
    }
    expect(problems).toEqual([]);
  }, 180_000);
});
