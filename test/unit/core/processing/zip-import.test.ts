import * as fc from 'fast-check';
import { readZipArchive } from '#adapters/archive/zip-reader';
import { parseLabelCsv } from '#core/processing/label-csv';
import { findLabelFile, LabelFileCandidate, labelFolderOf } from '#core/processing/label-file';
import type {
  ZipCustomMeta,
  ZipEntry,
  ZipEntryInfo,
  ZipLabels,
  ZipRequestMetadata,
} from '#core/processing/zip-entries';
import { MAX_WARNINGS, planZipImport, type ZipFilePlan } from '#core/processing/zip-import';
import { type ArchiveItem, buildZip, markEncrypted, renameEntry } from '../../../helpers/zip-archives';

const REQUEST: ZipLabels = { label1: 'source:upload', label2: 'team:sales' };
const NONE: ZipLabels = { label1: null, label2: null };
const NO_META: ZipCustomMeta = { customMeta1: null, customMeta2: null, customMeta3: null, customMeta4: null };

/** The whole flow the worker runs: read the archive, find and parse the label file, plan every file. */
async function importArchive(zip: Buffer, requestLabels: ZipRequestMetadata = REQUEST) {
  const entries: ZipEntry[] = [];
  const read = await readZipArchive(zip, {}, async (entry) => {
    entries.push(entry);
  });
  expect(read.error).toBeNull();
  const labelFile = findLabelFile(entries).fileName;
  const labelEntry = entries.find((e) => e.fileName === labelFile);
  const labelCsv = labelEntry && 'bytes' in labelEntry ? parseLabelCsv(labelEntry.bytes) : null;
  return planZipImport(entries, labelCsv, requestLabels);
}

async function planOf(items: readonly ArchiveItem[], requestLabels: ZipRequestMetadata = REQUEST) {
  return importArchive(await buildZip(items), requestLabels);
}

/** fileName → labels, custom id and error code: what the assertions compare. */
function outcomes(files: readonly ZipFilePlan[]) {
  return Object.fromEntries(
    files.map((f) => [
      f.fileName,
      {
        ...f.labels,
        ...(f.customDocumentId ? { customDocumentId: f.customDocumentId } : {}),
        ...(f.error ? { error: f.error.code } : {}),
      },
    ]),
  );
}

const docs: ArchiveItem[] = [
  { name: 'a.txt', data: 'alpha' },
  { name: 'b.pdf', data: 'beta' },
  { name: 'reports/INV-001.md', data: '# invoice' },
];

describe('ZIP import planning (real archives)', () => {
  it('gives every file the request labels when the archive has no CSV', async () => {
    const plan = await planOf(docs);
    expect(plan.labelFile).toBeNull();
    expect(plan.warnings).toEqual([]);
    expect(outcomes(plan.files)).toEqual({ 'a.txt': REQUEST, 'b.pdf': REQUEST, 'reports/INV-001.md': REQUEST });
  });

  it.each([
    ['without a header', 'a.txt,topic:billing,region:eu\n', 1],
    ['with a header', 'filename,label1,label2\na.txt,topic:billing,region:eu\n', 2],
    [
      'with a header naming other columns',
      'Identifier,Primary Label,Secondary Label\na.txt,topic:billing,region:eu\n',
      2,
    ],
    ['with CRLF line ends and a UTF-8 BOM', '\uFEFFfile,label1,label2\r\na.txt,topic:billing,region:eu\r\n', 2],
    ['with semicolons (spreadsheet locales)', 'file;label1;label2\na.txt;topic:billing;region:eu\n', 2],
    ['with spaces around cells and blank lines', '\n  a.txt , topic:billing ,  region:eu  \n\n,,\n', 2],
  ])(
    'applies the CSV row to the file it names, %s; unlisted files get the request labels',
    async (_case, csv, line) => {
      const plan = await planOf([...docs, { name: 'labels.csv', data: csv }]);
      expect(plan.labelFile).toBe('labels.csv');
      expect(plan.warnings).toEqual([]);
      expect(outcomes(plan.files)).toEqual({
        'a.txt': { label1: 'topic:billing', label2: 'region:eu' },
        'b.pdf': REQUEST,
        'reports/INV-001.md': REQUEST,
      });
      expect(plan.files.map((f) => f.labelRow)).toEqual([line, null, null]);
    },
  );

  it('ignores a header whose first cell is also a file name without extension', async () => {
    const plan = await planOf([
      { name: 'id.txt', data: 'x' },
      { name: 'labels.csv', data: 'id,label1,label2\nid.txt,topic:x,\n' },
    ]);
    expect(plan.warnings).toEqual([]);
    expect(outcomes(plan.files)).toEqual({ 'id.txt': { label1: 'topic:x', label2: null } });
  });

  it('never imports the label file as a document', async () => {
    const plan = await planOf([...docs, { name: 'labels.csv', data: 'a.txt,topic:x\n' }]);
    expect(plan.files.map((f) => f.fileName)).toEqual(['a.txt', 'b.pdf', 'reports/INV-001.md']);
  });

  it('treats an empty label column as no label, not as the request label', async () => {
    const csv = ['a.txt,,region:eu', 'b.pdf,topic:x,', 'reports/INV-001.md'].join('\n');
    const plan = await planOf([...docs, { name: 'labels.csv', data: csv }]);
    expect(outcomes(plan.files)).toEqual({
      'a.txt': { label1: null, label2: 'region:eu' },
      'b.pdf': { label1: 'topic:x', label2: null },
      'reports/INV-001.md': NONE,
    });
  });

  it('matches a file by its path in the archive or by its base name', async () => {
    const plan = await planOf([
      { name: 'x/same.txt', data: '1' },
      { name: 'y/same.txt', data: '2' },
      { name: 'y/other.txt', data: '3' },
      { name: 'labels.csv', data: 'same.txt,topic:both\ny/other.txt,topic:path\n' },
    ]);
    expect(outcomes(plan.files)).toEqual({
      'x/same.txt': { label1: 'topic:both', label2: null },
      'y/same.txt': { label1: 'topic:both', label2: null },
      'y/other.txt': { label1: 'topic:path', label2: null },
    });
  });

  it('matches a file by custom document id (its name without extension) and gives it that id', async () => {
    const plan = await planOf([...docs, { name: 'labels.csv', data: 'id,label1,label2\nINV-001,topic:invoice,\n' }]);
    expect(plan.warnings).toEqual([]);
    expect(outcomes(plan.files)['reports/INV-001.md']).toEqual({
      label1: 'topic:invoice',
      label2: null,
      customDocumentId: 'INV-001',
    });
    expect(outcomes(plan.files)['a.txt']).toEqual(REQUEST);
  });

  it('prefers a file name over a custom document id', async () => {
    const plan = await planOf([
      { name: 'notes', data: 'no extension' },
      { name: 'notes.txt', data: 'with extension' },
      { name: 'labels.csv', data: 'notes,topic:plain\n' },
    ]);
    expect(outcomes(plan.files)).toEqual({ notes: { label1: 'topic:plain', label2: null }, 'notes.txt': REQUEST });
  });

  it('fails the files of a custom document id that matches several files, naming them', async () => {
    const plan = await planOf([
      { name: 'INV-002.pdf', data: 'pdf' },
      { name: 'INV-002.txt', data: 'txt' },
      { name: 'c.txt', data: 'c' },
      { name: 'labels.csv', data: 'INV-002,topic:invoice\n' },
    ]);
    expect(outcomes(plan.files)).toEqual({
      'INV-002.pdf': { label1: 'topic:invoice', label2: null, error: 'INVALID_LABEL_ROW' },
      'INV-002.txt': { label1: 'topic:invoice', label2: null, error: 'INVALID_LABEL_ROW' },
      'c.txt': REQUEST,
    });
    expect(plan.files[0].error?.message).toContain('INV-002.pdf, INV-002.txt');
  });

  it('fails only the file of a row with an invalid label, naming the column and the rule', async () => {
    const csv =
      'file,label1,label2\na.txt,Topic:Billing,region:eu\nb.pdf,topic:ok,region:2024-01-31\nreports/INV-001.md,topic:fine,\n';
    const plan = await planOf([...docs, { name: 'labels.csv', data: csv }]);
    expect(outcomes(plan.files)).toEqual({
      'a.txt': { ...NONE, error: 'INVALID_LABEL' },
      'b.pdf': { ...NONE, error: 'INVALID_LABEL' },
      'reports/INV-001.md': { label1: 'topic:fine', label2: null },
    });
    const [a, b] = plan.files;
    expect(a.error?.message).toBe(
      'label file line 2: column 2 (label1) "Topic:Billing" must not contain uppercase letters: use lowercase letters, digits, hyphen and underscore (label.characters)',
    );
    expect(b.error?.message).toMatch(
      /^label file line 3: column 3 \(label2\) "region:2024-01-31" .*\(label\.noIsoDate\)$/,
    );
  });

  it('reads a first row with an invalid label as data when it names a file (so the mistake is not hidden)', async () => {
    const plan = await planOf([...docs, { name: 'labels.csv', data: 'a.txt,Topic:X\nb.pdf,topic:y\n' }]);
    expect(outcomes(plan.files)['a.txt']).toEqual({ ...NONE, error: 'INVALID_LABEL' });
    expect(outcomes(plan.files)['b.pdf']).toEqual({ label1: 'topic:y', label2: null });
  });

  it('keeps the first row for a file named twice, with a warning', async () => {
    const csv = 'a.txt,topic:first\na.txt,topic:second\nalpha,topic:third\n';
    const plan = await planOf([{ name: 'alpha.txt', data: 'x' }, ...docs, { name: 'labels.csv', data: csv }]);
    expect(outcomes(plan.files)['a.txt']).toEqual({ label1: 'topic:first', label2: null });
    expect(outcomes(plan.files)['alpha.txt']).toEqual({
      label1: 'topic:third',
      label2: null,
      customDocumentId: 'alpha',
    });
    expect(plan.warnings).toEqual([
      'label file line 2: a.txt is already named by line 1; the first row wins and this one is ignored for it',
    ]);
  });

  it('warns about rows that name no file, and ignores them', async () => {
    const csv = 'a.txt,topic:x\nmissing.pdf,topic:y\n,topic:z\nlabels.csv,topic:w\n';
    const plan = await planOf([...docs, { name: 'labels.csv', data: csv }]);
    expect(outcomes(plan.files)['a.txt']).toEqual({ label1: 'topic:x', label2: null });
    expect(plan.warnings).toEqual([
      expect.stringMatching(/^label file line 2: "missing\.pdf" names no file of the archive/),
      'label file line 3: the first column (the file identifier) is empty; the row is ignored',
      'label file line 4: it names the label file itself, which is not a document; the row is ignored',
    ]);
  });

  it('handles quoted identifiers with commas and quotes', async () => {
    const plan = await planOf([
      { name: 'a, b "final".txt', data: 'x' },
      { name: 'labels.csv', data: '"a, b ""final"".txt",topic:quoted\n' },
    ]);
    expect(outcomes(plan.files)).toEqual({ 'a, b "final".txt': { label1: 'topic:quoted', label2: null } });
  });

  it('ignores columns after the seventh, with one warning', async () => {
    const csv = 'file,label1,label2,m1,m2,m3,m4,notes\na.txt,topic:x,,,,,,checked by ann\nb.pdf,topic:y,,,,,,by bob\n';
    const plan = await planOf([...docs, { name: 'labels.csv', data: csv }]);
    expect(outcomes(plan.files)['b.pdf']).toEqual({ label1: 'topic:y', label2: null });
    expect(plan.files[1].customMeta).toEqual(NO_META);
    expect(plan.warnings).toEqual([expect.stringMatching(/^label file line 1: columns after the seventh are ignored/)]);
  });

  describe('which CSV is the label file', () => {
    it('a CSV in a folder is a document', async () => {
      const plan = await planOf([...docs, { name: 'data/table.csv', data: 'a.txt,topic:x\n' }]);
      expect(plan.labelFile).toBeNull();
      expect(outcomes(plan.files)).toEqual({
        'a.txt': REQUEST,
        'b.pdf': REQUEST,
        'reports/INV-001.md': REQUEST,
        'data/table.csv': REQUEST,
      });
    });

    it('the one root CSV is the label file even when folders hold other CSVs', async () => {
      const plan = await planOf([
        ...docs,
        { name: 'data/table.csv', data: 'x,y\n' },
        { name: 'LABELS.CSV', data: 'data/table.csv,kind:table\n' },
      ]);
      expect(plan.labelFile).toBe('LABELS.CSV');
      expect(outcomes(plan.files)['data/table.csv']).toEqual({ label1: 'kind:table', label2: null });
    });

    it('a second entry with the label file’s path is refused, not a second label file', async () => {
      const plan = await planOf([
        ...docs,
        { name: 'labels.csv', data: 'a.txt,topic:x\n' },
        { name: 'labels.csv', data: 'a.txt,topic:y\n' },
      ]);
      expect(plan.labelFile).toBe('labels.csv');
      expect(outcomes(plan.files)).toMatchObject({
        'a.txt': { label1: 'topic:x', label2: null },
        'labels.csv': { error: 'DUPLICATE_ENTRY' },
      });
    });

    it('several root CSVs are all documents, with a warning', async () => {
      const plan = await planOf([
        ...docs,
        { name: 'one.csv', data: 'a.txt,topic:x\n' },
        { name: 'two.csv', data: 'b.pdf,topic:y\n' },
      ]);
      expect(plan.labelFile).toBeNull();
      expect(plan.files.map((f) => f.fileName)).toContain('one.csv');
      expect(outcomes(plan.files)['a.txt']).toEqual(REQUEST);
      expect(plan.warnings).toEqual([expect.stringContaining('2 CSV files at the archive root (one.csv, two.csv)')]);
    });
  });

  describe('a label file that cannot be used fails every file with INVALID_LABEL_FILE', () => {
    it.each([
      ['broken quoting', Buffer.from('a.txt,topic:x\n"b.pdf,topic:y\n')],
      ['not UTF-8', Buffer.from([0x61, 0x2e, 0x74, 0x78, 0x74, 0x2c, 0xe9, 0xff, 0x0a])],
    ])('%s', async (_case, data) => {
      const plan = await planOf([...docs, { name: 'labels.csv', data }]);
      expect(plan.labelFileError?.code).toBe('INVALID_LABEL_FILE');
      expect(Object.values(outcomes(plan.files))).toEqual([
        { ...NONE, error: 'INVALID_LABEL_FILE' },
        { ...NONE, error: 'INVALID_LABEL_FILE' },
        { ...NONE, error: 'INVALID_LABEL_FILE' },
      ]);
    });

    it('an encrypted label file', async () => {
      const built = await buildZip([...docs, { name: 'labels.csv', data: 'a.txt,topic:x\n' }]);
      const plan = await importArchive(markEncrypted(built, 'labels.csv'));
      expect(plan.labelFileError?.message).toContain('ENCRYPTED_ENTRY');
      expect(plan.files.every((f) => f.error?.code === 'INVALID_LABEL_FILE')).toBe(true);
    });
  });

  it('keeps the reader’s refusal of an entry in its plan, and still imports the rest', async () => {
    const inner = await buildZip([{ name: 'x.txt', data: 'x' }]);
    const built = await buildZip([
      ...docs,
      { name: 'xx/evil.txt', data: 'pwned' },
      { name: 'nested.zip', data: inner },
      { name: '__MACOSX/._a.txt', data: 'junk' },
      { name: 'labels.csv', data: 'a.txt,topic:x\nnested.zip,topic:y\n' },
    ]);
    const plan = await importArchive(renameEntry(built, 'xx/evil.txt', '../evil.txt'));
    expect(outcomes(plan.files)).toEqual({
      'a.txt': { label1: 'topic:x', label2: null },
      'b.pdf': REQUEST,
      'reports/INV-001.md': REQUEST,
      '../evil.txt': { ...REQUEST, error: 'UNSAFE_PATH' },
      'nested.zip': { label1: 'topic:y', label2: null, error: 'NESTED_ARCHIVE' },
    });
  });

  it('plans the example of docs/zip-import.md as documented', async () => {
    const csv = [
      'file,label1,label2',
      'contracts/acme.pdf,customer:acme,kind:contract',
      'INV-001,kind:invoice,',
      'readme.txt,,',
      'slides.pptx,Topic:Sales,',
      'missing.pdf,topic:x,',
    ].join('\n');
    const plan = await planOf([
      { name: 'labels.csv', data: csv },
      { name: 'contracts/acme.pdf', data: 'a' },
      { name: 'contracts/INV-001.pdf', data: 'b' },
      { name: 'notes/acme.pdf', data: 'c' },
      { name: 'readme.txt', data: 'd' },
      { name: 'slides.pptx', data: await buildZip([{ name: 'ppt/slide1.xml', data: '<p/>' }]) },
    ]);
    expect(outcomes(plan.files)).toEqual({
      'contracts/acme.pdf': { label1: 'customer:acme', label2: 'kind:contract' },
      'contracts/INV-001.pdf': { label1: 'kind:invoice', label2: null, customDocumentId: 'INV-001' },
      'notes/acme.pdf': REQUEST,
      'readme.txt': NONE,
      'slides.pptx': { ...NONE, error: 'INVALID_LABEL' },
    });
    expect(plan.warnings).toEqual([expect.stringMatching(/^label file line 6: "missing\.pdf" names no file/)]);
  });

  it('warns when no file can be imported', async () => {
    const plan = await planOf([{ name: 'labels.csv', data: 'a.txt,topic:x\n' }]);
    expect(plan.files).toEqual([]);
    expect(plan.warnings).toContain('the archive holds no file that can be imported');
  });
});

describe('parseLabelCsv', () => {
  it('returns every non-empty row with its line and labels', () => {
    expect(parseLabelCsv('a.txt,topic:x,\n\nb.txt').rows).toEqual([
      {
        line: 1,
        identifier: 'a.txt',
        result: { labels: { label1: 'topic:x', label2: null }, customMeta: {} },
        looksLikeHeader: false,
      },
      { line: 3, identifier: 'b.txt', result: { labels: NONE, customMeta: {} }, looksLikeHeader: false },
    ]);
  });

  it('reports a row with an invalid label without failing the others', () => {
    const { rows, error } = parseLabelCsv('a.txt,nocolon\nb.txt,topic:y');
    expect(error).toBeNull();
    expect(rows[0].result).toEqual({
      error: { code: 'INVALID_LABEL', message: expect.stringContaining('column 2 (label1) "nocolon"') },
    });
    expect(rows[1].result).toEqual({ labels: { label1: 'topic:y', label2: null }, customMeta: {} });
  });
});

describe('planZipImport', () => {
  const entries: ZipEntryInfo[] = [{ fileName: 'a.txt' }, { fileName: 'b.txt' }, { fileName: 'labels.csv' }];

  it('fails every file when the label file exists but was not given', () => {
    const plan = planZipImport(entries, null, REQUEST);
    expect(plan.labelFileError?.message).toContain('could not be read');
    expect(plan.files.map((f) => f.error?.code)).toEqual(['INVALID_LABEL_FILE', 'INVALID_LABEL_FILE']);
  });

  it(`keeps at most ${MAX_WARNINGS} warnings and says how many more there were`, () => {
    const csv = Array.from({ length: 120 }, (_, i) => `missing-${i}.txt,topic:x`).join('\n');
    const plan = planZipImport(entries, parseLabelCsv(csv), REQUEST);
    expect(plan.warnings).toHaveLength(MAX_WARNINGS);
    expect(plan.warnings.at(-1)).toBe(`… and ${120 - (MAX_WARNINGS - 1)} more warnings`);
  });

  it('findLabelFile picks the single root CSV, case-insensitively', () => {
    expect(findLabelFile([{ fileName: 'x/labels.csv' }, { fileName: 'Labels.CSV' }]).fileName).toBe('Labels.CSV');
    expect(findLabelFile([{ fileName: 'x/labels.csv' }, { fileName: 'y/a.txt' }]).fileName).toBeNull();
  });

  it('gives each listed file its row and every other file the request labels (property)', () => {
    const segment = fc.stringMatching(/^[a-z][a-z0-9_-]{0,8}$/);
    // Label parts without digits, so that no generated label holds a date or a timestamp by chance.
    const word = fc.stringMatching(/^[a-z][a-z_-]{0,8}$/);
    const label = fc.option(
      fc.tuple(word, word).map(([ns, v]) => `${ns}:${v}`),
      { nil: null },
    );
    const file = fc.record({ stem: segment, ext: fc.constantFrom('txt', 'pdf', 'md'), folder: fc.boolean() });
    fc.assert(
      fc.property(
        fc.uniqueArray(file, { minLength: 1, maxLength: 12, selector: (f) => `${f.stem}` }),
        fc.array(fc.tuple(fc.boolean(), label, label, fc.constantFrom('name', 'path', 'id')), { maxLength: 12 }),
        fc.boolean(),
        (files, choices, withHeader) => {
          const names = files.map((f) => `${f.folder ? 'dir/' : ''}${f.stem}.${f.ext}`);
          const expected = new Map<string, ZipLabels & { customDocumentId?: string }>();
          const lines: string[] = withHeader ? ['file,label1,label2'] : [];
          names.forEach((name, i) => {
            const choice = choices[i];
            if (!choice?.[0]) return;
            const [, label1, label2, by] = choice;
            const { stem, ext } = files[i];
            const identifier = by === 'path' ? name : by === 'name' ? `${stem}.${ext}` : stem;
            lines.push(`${identifier},${label1 ?? ''},${label2 ?? ''}`);
            expected.set(name, { label1, label2, ...(by === 'id' ? { customDocumentId: stem } : {}) });
          });
          const plan = planZipImport(
            [...names.map((fileName) => ({ fileName })), { fileName: 'labels.csv' }],
            parseLabelCsv(lines.join('\n')),
            REQUEST,
          );
          expect(plan.warnings).toEqual([]);
          expect(outcomes(plan.files)).toEqual(Object.fromEntries(names.map((n) => [n, expected.get(n) ?? REQUEST])));
        },
      ),
    );
  });
});

describe('a label file in the single top-level folder (an archive made by "compress folder")', () => {
  const folderDocs: ArchiveItem[] = [
    { name: 'reports/a.pdf', data: 'alpha' },
    { name: 'reports/sub/b.txt', data: 'beta' },
    { name: 'reports/sub/c.txt', data: 'gamma' },
    { name: 'reports/d.md', data: 'delta' },
  ];

  it('is the label file, is no document, and names files with or without the folder', async () => {
    const csv = [
      'file,label1,label2',
      'a.pdf,topic:by-name,',
      'sub/b.txt,topic:in-folder,',
      'reports/sub/c.txt,topic:full-path,',
    ].join('\n');
    const plan = await planOf([
      { name: 'reports/' },
      { name: 'reports/labels.csv', data: csv },
      ...folderDocs,
      // what macOS adds when it compresses a folder: skipped, so the archive is still "one folder"
      { name: '__MACOSX/reports/._a.pdf', data: 'resource fork' },
      { name: 'reports/.DS_Store', data: 'finder' },
    ]);
    expect(plan.labelFile).toBe('reports/labels.csv');
    expect(plan.warnings).toEqual([]);
    expect(outcomes(plan.files)).toEqual({
      'reports/a.pdf': { label1: 'topic:by-name', label2: null },
      'reports/sub/b.txt': { label1: 'topic:in-folder', label2: null },
      'reports/sub/c.txt': { label1: 'topic:full-path', label2: null },
      'reports/d.md': REQUEST,
    });
  });

  it('is found wherever it comes in the archive, and a custom document id still names a file', async () => {
    const plan = await planOf([...folderDocs, { name: 'reports/Labels.CSV', data: 'd,kind:memo\n' }]);
    expect(plan.labelFile).toBe('reports/Labels.CSV');
    expect(outcomes(plan.files)['reports/d.md']).toEqual({ label1: 'kind:memo', label2: null, customDocumentId: 'd' });
  });

  it('prefers the full path over the same path inside the folder', async () => {
    const plan = await planOf([
      { name: 'reports/reports/a.txt', data: 'nested' },
      { name: 'reports/a.txt', data: 'top' },
      { name: 'reports/labels.csv', data: 'reports/a.txt,topic:top\n' },
    ]);
    expect(outcomes(plan.files)).toEqual({
      'reports/reports/a.txt': REQUEST,
      'reports/a.txt': { label1: 'topic:top', label2: null },
    });
  });

  it('warns about a row naming the label file by its name inside the folder', async () => {
    const plan = await planOf([...folderDocs, { name: 'reports/labels.csv', data: 'labels.csv,topic:x\n' }]);
    expect(plan.warnings).toEqual([
      'label file line 1: it names the label file itself, which is not a document; the row is ignored',
    ]);
  });

  it.each<[string, ArchiveItem[]]>([
    ['a file sits at the root', [...folderDocs, { name: 'readme.txt', data: 'r' }]],
    ['another top-level folder holds a file', [...folderDocs, { name: 'other/x.txt', data: 'x' }]],
  ])('is a document when %s', async (_case, items) => {
    const plan = await planOf([{ name: 'reports/labels.csv', data: 'a.pdf,topic:x\n' }, ...items]);
    expect(plan.labelFile).toBeNull();
    expect(outcomes(plan.files)['reports/labels.csv']).toEqual(REQUEST);
    expect(outcomes(plan.files)['reports/a.pdf']).toEqual(REQUEST);
  });

  it('is a document in a deeper folder', async () => {
    const plan = await planOf([...folderDocs, { name: 'reports/sub/labels.csv', data: 'a.pdf,topic:x\n' }]);
    expect(plan.labelFile).toBeNull();
    expect(outcomes(plan.files)['reports/a.pdf']).toEqual(REQUEST);
  });

  it('two CSVs in that folder are both documents, with a warning', async () => {
    const plan = await planOf([
      ...folderDocs,
      { name: 'reports/one.csv', data: 'a.pdf,topic:x\n' },
      { name: 'reports/two.csv', data: 'a.pdf,topic:y\n' },
    ]);
    expect(plan.labelFile).toBeNull();
    expect(plan.warnings).toEqual([
      expect.stringContaining('2 CSV files in reports/, the folder that holds every file (reports/one.csv'),
    ]);
  });

  it('labelFolderOf: the one top-level folder of every entry, else the root', () => {
    expect(labelFolderOf([{ fileName: 'r/a' }, { fileName: 'r/s/b' }])).toBe('r/');
    expect(labelFolderOf([{ fileName: 'r/a' }, { fileName: 'b' }])).toBe('');
    expect(labelFolderOf([{ fileName: 'r/a' }, { fileName: 's/b' }])).toBe('');
    expect(labelFolderOf([])).toBe('');
  });
});

describe('LabelFileCandidate (what a reader keeps while the archive streams)', () => {
  it('ends on the label file whenever the archive has one, holding one candidate at a time (property)', () => {
    const path = fc
      .tuple(
        fc.constantFrom('', 'r/', 's/'),
        fc.constantFrom('', 'sub/'),
        fc.constantFrom('a.csv', 'b.CSV', 'c.txt', 'd.pdf'),
      )
      .map(([top, sub, name]) => `${top}${sub}${name}`);
    fc.assert(
      fc.property(fc.array(fc.tuple(path, fc.boolean()), { maxLength: 10 }), (items) => {
        const seen = new Set<string>();
        const entries: ZipEntryInfo[] = items.map(([fileName, encrypted]) => {
          const duplicate = seen.has(fileName);
          seen.add(fileName);
          if (duplicate) return { fileName, rejected: { code: 'DUPLICATE_ENTRY', message: 'again' } };
          return encrypted ? { fileName, rejected: { code: 'ENCRYPTED_ENTRY', message: 'locked' } } : { fileName };
        });
        const candidate = new LabelFileCandidate();
        for (const entry of entries) candidate.offer(entry);
        const labelFile = findLabelFile(entries).fileName;
        if (labelFile !== null) expect(candidate.fileName).toBe(labelFile);
      }),
    );
  });
});

describe('custom metadata', () => {
  const META: ZipRequestMetadata = { ...REQUEST, customMeta1: 'batch:7', customMeta3: 'from the request' };
  const META_OUT: ZipCustomMeta = { ...NO_META, customMeta1: 'batch:7', customMeta3: 'from the request' };

  it('every file inherits the request’s, as it inherits its labels', async () => {
    const plan = await planOf(docs, META);
    expect(plan.files.map((f) => f.customMeta)).toEqual([META_OUT, META_OUT, META_OUT]);
  });

  it('a label file without custom metadata columns leaves them to the request, even for the files it names', async () => {
    const plan = await planOf([...docs, { name: 'labels.csv', data: 'a.txt,topic:x,region:eu\n' }], META);
    expect(plan.files[0]).toMatchObject({ labels: { label1: 'topic:x', label2: 'region:eu' }, customMeta: META_OUT });
  });

  it('reads columns 4 to 7 as customMeta1..4 for the files a row names (an empty cell = none)', async () => {
    const csv = [
      'file,label1,label2,customMeta1,customMeta2',
      'a.txt,topic:x,,Owner: Ann,"note, with comma"',
      'b.pdf,,,,only the second',
      'reports/INV-001.md,topic:y',
    ].join('\n');
    const plan = await planOf([...docs, { name: 'labels.csv', data: csv }], META);
    expect(plan.warnings).toEqual([]);
    // customMeta3 and 4 are columns the file does not have: the request's values stay.
    expect(plan.files.map((f) => f.customMeta)).toEqual([
      {
        customMeta1: 'Owner: Ann',
        customMeta2: 'note, with comma',
        customMeta3: 'from the request',
        customMeta4: null,
      },
      { customMeta1: null, customMeta2: 'only the second', customMeta3: 'from the request', customMeta4: null },
      { customMeta1: null, customMeta2: null, customMeta3: 'from the request', customMeta4: null },
    ]);
  });

  it('counts 500 emoji as 500 characters, and fails only the file of a longer value', async () => {
    const emoji500 = '😀'.repeat(500);
    const csv = `a.txt,topic:x,,,,,${emoji500}\nb.pdf,topic:y,,${'é'.repeat(501)}\n`;
    const plan = await planOf([...docs, { name: 'labels.csv', data: csv }]);
    expect(plan.files[0]).toMatchObject({ labels: { label1: 'topic:x' }, customMeta: { customMeta4: emoji500 } });
    expect(plan.files[0].error).toBeUndefined();
    expect(plan.files[1]).toMatchObject({ labels: NONE, customMeta: NO_META });
    expect(plan.files[1].error).toEqual({
      code: 'INVALID_CUSTOM_META',
      message: `label file line 2: column 4 (customMeta1) "${'é'.repeat(57)}…" must be at most 500 characters (it has 501) (maxLength)`,
    });
    expect(plan.files[2].error).toBeUndefined();
  });

  it('reports a broken label before a broken custom value of the same row', async () => {
    const plan = await planOf([...docs, { name: 'labels.csv', data: `a.txt,Topic:X,,${'x'.repeat(501)}\n` }]);
    expect(plan.files[0].error?.code).toBe('INVALID_LABEL');
    expect(plan.files[0].error?.message).toMatch(/column 2 \(label1\).*; column 4 \(customMeta1\)/);
  });

  it('reads a first row naming the custom columns as a header even when its label cells are empty', async () => {
    const plan = await planOf(
      [
        { name: 'file.txt', data: 'x' },
        { name: 'labels.csv', data: 'file,,,customMeta1\nfile.txt,,,kept\n' },
      ],
      META,
    );
    expect(plan.warnings).toEqual([]);
    expect(plan.files[0].customMeta).toEqual({ ...META_OUT, customMeta1: 'kept' });
  });
});
