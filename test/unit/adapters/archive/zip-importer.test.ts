/**
 * The ArchiveImporter as the worker runs it: a real archive on disk, read once while streaming (keeping one CSV's
 * content at most), then planned. What planning decides is tested in zip-import.test.ts; this proves the streaming
 * keeps the right CSV and passes the request's metadata through.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ZipArchiveImporter } from '#adapters/archive/zip-importer';
import { DEFAULT_ZIP_LIMITS } from '#adapters/archive/zip-reader';
import type { PlannedFile } from '#ports/zip-jobs';
import { type ArchiveItem, buildZip } from '../../../helpers/zip-archives';

let folder: string;
beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'zip-importer-'));
});
afterAll(() => rm(folder, { recursive: true, force: true }));

const REQUEST = {
  label1: 'source:upload',
  label2: null,
  customMeta1: 'batch:7',
  customMeta2: null,
  customMeta3: null,
  customMeta4: null,
};

async function plan(items: readonly ArchiveItem[], importer = new ZipArchiveImporter()) {
  const path = join(folder, `${Math.random().toString(36).slice(2)}.zip`);
  await writeFile(path, await buildZip(items));
  const archive = importer.open(path);
  try {
    return await archive.plan(REQUEST);
  } finally {
    archive.close();
  }
}

function byName(files: readonly PlannedFile[]) {
  return Object.fromEntries(files.map(({ fileName, ...rest }) => [fileName, rest]));
}

describe('ZipArchiveImporter', () => {
  it.each([
    ['first', (docs: ArchiveItem[], csv: ArchiveItem) => [csv, ...docs]],
    ['last', (docs: ArchiveItem[], csv: ArchiveItem) => [...docs, csv]],
    [
      'after another CSV of a subfolder',
      (docs: ArchiveItem[], csv: ArchiveItem) => [...docs.slice(0, 1), csv, ...docs.slice(1)],
    ],
  ])('reads the label CSV of the folder that holds every file when it comes %s', async (_case, order) => {
    const docs: ArchiveItem[] = [
      { name: 'reports/data/table.csv', data: 'x,y\n' },
      { name: 'reports/a.txt', data: 'alpha' },
      { name: 'reports/sub/b.txt', data: 'beta' },
    ];
    const csv = {
      name: 'reports/labels.csv',
      data: 'file,label1,label2,customMeta1,customMeta2\na.txt,topic:a,,,from the row\nsub/b.txt,topic:b,kind:x\n',
    };
    const result = await plan(order(docs, csv));
    expect(result.ok).toBe(true);
    expect(result.warnings).toEqual([]);
    const files = byName(result.files);
    expect(Object.keys(files).sort()).toEqual(['reports/a.txt', 'reports/data/table.csv', 'reports/sub/b.txt']);
    expect(files['reports/a.txt']).toMatchObject({
      label1: 'topic:a',
      label2: null,
      customMeta1: null,
      customMeta2: 'from the row',
      customMeta3: null,
    });
    expect(files['reports/sub/b.txt']).toMatchObject({ label1: 'topic:b', label2: 'kind:x', customMeta1: null });
    expect(files['reports/data/table.csv']).toMatchObject({ ...REQUEST, size: 4 });
  });

  it('drops the folder CSV it kept once a file at the root shows the archive is no single folder', async () => {
    const result = await plan([
      { name: 'reports/labels.csv', data: 'a.txt,topic:a\n' },
      { name: 'reports/a.txt', data: 'alpha' },
      { name: 'readme.txt', data: 'read me' },
      { name: 'labels.csv', data: 'readme.txt,topic:root\n' },
    ]);
    const files = byName(result.files);
    expect(files['reports/labels.csv']).toMatchObject({ label1: 'source:upload', customMeta1: 'batch:7' });
    expect(files['reports/a.txt']).toMatchObject({ label1: 'source:upload', customMeta1: 'batch:7' });
    expect(files['readme.txt']).toMatchObject({ label1: 'topic:root', customMeta1: 'batch:7' });
    expect(files['labels.csv']).toBeUndefined();
  });

  it(`takes ${DEFAULT_ZIP_LIMITS.maxEntries} files by default, the figure docs/zip-import.md gives, and refuses one more`, async () => {
    const docs = await readFile(join(__dirname, '../../../../docs/zip-import.md'), 'utf8');
    const documented = /^\| files per archive [^|]*\| ([\d,]+) \|/m.exec(docs)?.[1];
    expect(Number(documented?.replaceAll(',', ''))).toBe(DEFAULT_ZIP_LIMITS.maxEntries);
    expect(DEFAULT_ZIP_LIMITS.maxEntries).toBe(2000);

    const files = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `f${i}.txt`, data: `${i}` }));
    const atCap = await plan(files(2000));
    expect(atCap.ok).toBe(true);
    expect(atCap.files).toHaveLength(2000);
    const over = await plan(files(2001));
    expect(over).toMatchObject({ ok: false, error: { code: 'ARCHIVE_TOO_LARGE' }, files: [] });
  });
});
