/**
 * `npm run diff -- <stage>` (scripts/diff-gate.ts): a deploy that would replace, delete or orphan a resource holding
 * data is refused before it starts; an ordinary change passes.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { statefulLosses } from '../../lib/stateful-resources';
import { synthesizedTemplate } from '../../scripts/diff-gate';

type Template = { Resources: Record<string, { Type: string; Properties: Record<string, unknown> }> };

const current = synthesizedTemplate('dev') as Template;
const copy = (): Template => JSON.parse(JSON.stringify(current));
const tableIds = Object.keys(current.Resources).filter((id) => current.Resources[id].Type === 'AWS::DynamoDB::Table');

test('the same template, or a change of a function, loses nothing', () => {
  expect(statefulLosses(current, current)).toEqual([]);
  const next = copy();
  const fn = Object.keys(next.Resources).find((id) => next.Resources[id].Type === 'AWS::Lambda::Function') as string;
  next.Resources[fn].Properties.MemorySize = 4096;
  expect(statefulLosses(current, next)).toEqual([]);
});

test('a changed key schema replaces the table: named with the property', () => {
  const next = copy();
  const table = next.Resources[tableIds[0]].Properties as { KeySchema: { AttributeName: string }[] };
  table.KeySchema[0].AttributeName = 'renamedKey';
  expect(statefulLosses(current, next)).toEqual([
    expect.objectContaining({
      logicalId: tableIds[0],
      type: 'AWS::DynamoDB::Table',
      impact: 'WILL_REPLACE',
      properties: expect.arrayContaining(['KeySchema']),
    }),
  ]);
});

test('a table under a new logical id (a refactor) is a loss of the old one', () => {
  const next = copy();
  next.Resources[`${tableIds[0]}Moved`] = next.Resources[tableIds[0]];
  delete next.Resources[tableIds[0]];
  expect(statefulLosses(current, next)).toEqual([
    expect.objectContaining({ logicalId: tableIds[0], impact: expect.stringMatching(/WILL_(DESTROY|ORPHAN)/) }),
  ]);
});

test('the command exits 1 naming the resource, and 0 when nothing is lost', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'diff-gate-test-'));
  try {
    const run = (deployed: Template) => {
      const file = path.join(dir, 'deployed.json');
      fs.writeFileSync(file, JSON.stringify(deployed));
      return spawnSync('npx', ['tsx', 'scripts/diff-gate.ts', 'dev', '--deployed', file], {
        cwd: path.join(__dirname, '..', '..'),
        encoding: 'utf8',
      });
    };
    const same = run(current);
    expect({ status: same.status, out: same.stdout }).toEqual({
      status: 0,
      out: expect.stringContaining('no resource that holds data would be replaced'),
    });
    // What is deployed has a table this checkout would key differently.
    const deployed = copy();
    (
      deployed.Resources[tableIds[1]].Properties as { KeySchema: { AttributeName: string }[] }
    ).KeySchema[0].AttributeName = 'oldKey';
    const lossy = run(deployed);
    expect(lossy.status).toBe(1);
    expect(lossy.stderr).toContain(`WILL_REPLACE ${tableIds[1]} AWS::DynamoDB::Table (changed: `);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}, 120_000);
