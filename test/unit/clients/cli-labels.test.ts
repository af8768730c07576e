/**
 * The label file of `aps kb sync --labels-csv` (clients/cli/src/labels.ts) reads as a ZIP import's does
 * (docs/zip-import.md, "Label file"), and the customDocumentId a path gives stays within the API's rule.
 */
import { readLabelFile } from '../../../clients/cli/src/labels';
import { customDocumentIdOf } from '../../../clients/cli/src/sync';

const FILES = [
  'guides/setup.md',
  'guides/wifi.txt',
  'archive/wifi.txt',
  'returns.txt',
  'archive/returns.txt',
  'INV-001.pdf',
];

it('names a file by path, else every file of a base name, else one by its custom document id', () => {
  const { byPath, warnings } = readLabelFile(
    'file,label1,label2\nguides/setup.md,topic:setup,lang:en\nreturns.txt,topic:returns,\nwifi.txt,topic:wifi\nINV-001,topic:invoices,\n',
    FILES,
  );
  expect(Object.fromEntries(byPath)).toEqual({
    'guides/setup.md': { metadata: { label1: 'topic:setup', label2: 'lang:en' } },
    'returns.txt': { metadata: { label1: 'topic:returns', label2: null } },
    'guides/wifi.txt': { metadata: { label1: 'topic:wifi', label2: null } },
    'archive/wifi.txt': { metadata: { label1: 'topic:wifi', label2: null } },
    'INV-001.pdf': { metadata: { label1: 'topic:invoices', label2: null }, customDocumentId: 'INV-001' },
  });
  expect(warnings).toEqual([]);
});

it('reads custom metadata columns the file has, semicolons, a BOM and quoted cells', () => {
  const { byPath } = readLabelFile('\uFEFF"guides/wifi.txt";topic:wifi;;"owner=ops; desk"\nreturns.txt;;;\n', FILES);
  expect(byPath.get('guides/wifi.txt')).toEqual({
    metadata: { label1: 'topic:wifi', label2: null, customMeta1: 'owner=ops; desk' },
  });
  expect(byPath.get('returns.txt')).toEqual({ metadata: { label1: null, label2: null, customMeta1: null } });
});

it('warns of a row past the first that names no file, and of an ambiguous id', () => {
  const { byPath, warnings } = readLabelFile('setup.md,topic:setup\nmissing.txt,topic:x\nreport,topic:y\n', [
    'report.pdf',
    'report.txt',
    'setup.md',
  ]);
  expect([...byPath.keys()]).toEqual(['setup.md']);
  expect(warnings).toEqual([
    'labels line 2: "missing.txt" names no file of the folder',
    'labels line 3: "report" names several files; none gets its labels',
  ]);
});

it('derives a readable customDocumentId within the API rule, distinct for distinct paths', () => {
  const rule = /^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$/;
  const ids = ['guides/wifi.txt', 'guides wifi.txt', '../ö/日本.md', `${'x/'.repeat(200)}y.txt`].map(
    customDocumentIdOf,
  );
  for (const id of ids) expect(id).toMatch(rule);
  expect(ids[0]).toMatch(/^guides_wifi\.txt@[0-9a-f]{12}$/);
  expect(new Set(ids).size).toBe(ids.length);
});
