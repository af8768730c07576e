/**
 * CSV and JSON as lines that read and index well: a CSV row becomes `header: value; header: value`, a JSON value
 * `key.path: value`, so every value sits next to the name that gives it meaning.
 */
import { parse } from 'csv-parse/sync';
import { ProcessingError } from '#core/processing/errors';

/** The first row is the header. Empty cells are left out; a row longer than the header names its extra cells. */
export function csvToText(text: string): string {
  let rows: string[][];
  try {
    rows = parse(text, {
      delimiter: guessDelimiter(text),
      relax_column_count: true,
      skip_empty_lines: true,
      trim: true,
    });
  } catch (error) {
    throw new ProcessingError('PARSE_ERROR', `The CSV file cannot be read${csvErrorPlace(error)}.`);
  }
  const [header = [], ...records] = rows;
  const names = header.map((name, index) => name || `column ${index + 1}`);
  return records
    .map((record) =>
      record
        .map((value, index) => (value === '' ? '' : `${names[index] ?? `column ${index + 1}`}: ${value}`))
        .filter((pair) => pair !== '')
        .join('; '),
    )
    .filter((line) => line !== '')
    .join('\n');
}

/** Spreadsheets export `;` or tab separated files under a .csv name: the most frequent of them in the first line. */
function guessDelimiter(text: string): string {
  const end = text.indexOf('\n');
  const firstLine = end === -1 ? text : text.slice(0, end);
  const candidates = [',', ';', '\t'];
  const counts = candidates.map((candidate) => firstLine.split(candidate).length - 1);
  const best = counts.indexOf(Math.max(...counts));
  return counts[best] > 0 ? candidates[best] : ',';
}

/** Every scalar as `key.path: value` (array items as `key[0]`), in document order; nulls and empty containers say nothing. */
export function jsonToText(text: string): string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new ProcessingError('PARSE_ERROR', `The JSON file is not valid JSON${jsonErrorPlace(error)}.`);
  }
  const lines: string[] = [];
  // An explicit stack: a deeply nested file must not overflow the call stack.
  const stack: { path: string; value: unknown }[] = [{ path: '', value }];
  for (let item = stack.pop(); item; item = stack.pop()) {
    const { path, value: current } = item;
    if (current === null || current === '') continue;
    if (Array.isArray(current)) {
      for (let index = current.length - 1; index >= 0; index--) {
        stack.push({ path: `${path}[${index}]`, value: current[index] });
      }
    } else if (typeof current === 'object') {
      const entries = Object.entries(current);
      for (let index = entries.length - 1; index >= 0; index--) {
        const [key, child] = entries[index];
        stack.push({ path: path === '' ? key : `${path}.${key}`, value: child });
      }
    } else {
      lines.push(path === '' ? String(current) : `${path}: ${String(current)}`);
    }
  }
  return lines.join('\n');
}

// The parsers' own messages quote the offending content, which must not reach logs: only the place is kept.

function csvErrorPlace(error: unknown): string {
  const { code, lines } = (error ?? {}) as { code?: unknown; lines?: unknown };
  const reason = typeof code === 'string' ? ` (${code})` : '';
  return typeof lines === 'number' ? `${reason} at line ${lines}` : reason;
}

function jsonErrorPlace(error: unknown): string {
  const place = error instanceof Error ? /at position \d+( \(line \d+ column \d+\))?/.exec(error.message) : null;
  return place ? ` (${place[0]})` : '';
}
