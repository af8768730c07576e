import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_ZIP_LIMITS, openZipFileReader, readZipArchive, type ZipLimits } from '#adapters/archive/zip-reader';
import type { ZipEntry } from '#core/processing/zip-entries';
import {
  buildZip,
  corruptData,
  declareUncompressedSize,
  markEncrypted,
  renameEntry,
  setCompressionMethod,
} from '../../../helpers/zip-archives';

const MB = 1024 * 1024;

async function read(source: Buffer | string, limits: Partial<ZipLimits> = {}) {
  const entries: ZipEntry[] = [];
  const result = await readZipArchive(source, limits, async (entry) => {
    entries.push(entry);
  });
  const outcomes = entries.map((e) => ('rejected' in e ? [e.fileName, e.rejected.code] : [e.fileName, 'accepted']));
  return { result, entries, outcomes };
}

/** Bytes that do not compress: a long-period pseudo-random sequence. */
function incompressible(size: number, seed = 1): Buffer {
  const bytes = Buffer.alloc(size);
  let x = seed;
  for (let i = 0; i < size; i += 1) {
    x = (x * 1103515245 + 12345) >>> 0;
    bytes[i] = x >>> 24;
  }
  return bytes;
}

describe('readZipArchive', () => {
  it('yields every file with its path, base name, size and bytes, in archive order', async () => {
    const zip = await buildZip([
      { name: 'a.txt', data: 'alpha' },
      { name: 'docs/', data: undefined },
      { name: 'docs/b.md', data: '# beta', compress: false },
      { name: 'docs/deep/c.json', data: '{"c":1}' },
    ]);
    const { result, entries } = await read(zip);
    expect(result).toEqual({ entries: 3, bytesInflated: 5 + 6 + 7, error: null });
    expect(entries).toEqual([
      { fileName: 'a.txt', baseName: 'a.txt', size: 5, bytes: Buffer.from('alpha') },
      { fileName: 'docs/b.md', baseName: 'b.md', size: 6, bytes: Buffer.from('# beta') },
      { fileName: 'docs/deep/c.json', baseName: 'c.json', size: 7, bytes: Buffer.from('{"c":1}') },
    ]);
  });

  it('reads an archive from a file path as from a buffer', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'zip-reader-'));
    try {
      const path = join(dir, 'upload.zip');
      await writeFile(path, await buildZip([{ name: 'a.txt', data: 'alpha' }]));
      const { result, outcomes } = await read(path);
      expect(result.error).toBeNull();
      expect(outcomes).toEqual([['a.txt', 'accepted']]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('skips directories and macOS or Windows junk silently', async () => {
    const zip = await buildZip([
      { name: 'folder/', data: undefined },
      { name: '__MACOSX/', data: undefined },
      { name: '__MACOSX/._a.txt', data: 'resource fork' },
      { name: '__MACOSX/folder/._b.txt', data: 'resource fork' },
      { name: '.DS_Store', data: 'finder' },
      { name: 'folder/.DS_Store', data: 'finder' },
      { name: 'folder/Thumbs.db', data: 'thumbs' },
      { name: 'a.txt', data: 'alpha' },
      { name: 'folder/b.txt', data: 'beta' },
    ]);
    const { result, outcomes } = await read(zip);
    expect(result.error).toBeNull();
    expect(outcomes).toEqual([
      ['a.txt', 'accepted'],
      ['folder/b.txt', 'accepted'],
    ]);
  });

  describe('entries that escape the archive are refused one by one (UNSAFE_PATH), the others are read', () => {
    it.each([
      ['a relative path with ../', 'xx/evil.txt', '../evil.txt'],
      ['a deeper ../ path', 'docs/xx/xx/evil.txt', 'docs/../../evil.txt'],
      ['an absolute path', 'xetc/passwd', '/etc/passwd'],
      ['a drive letter', 'Cx/evil.txt', 'C:/evil.txt'],
      ['a backslash', 'docs_evil.txt', 'docs\\evil.txt'],
      ['a Windows ..\\ path', 'xx_evil.txt', '..\\evil.txt'],
    ])('%s', async (_case, builtName, patchedName) => {
      const built = await buildZip([
        { name: 'before.txt', data: 'before' },
        { name: builtName, data: 'pwned' },
        { name: 'after.txt', data: 'after' },
      ]);
      const { result, entries, outcomes } = await read(renameEntry(built, builtName, patchedName));
      expect(result.error).toBeNull();
      expect(outcomes).toEqual([
        ['before.txt', 'accepted'],
        [patchedName, 'UNSAFE_PATH'],
        ['after.txt', 'accepted'],
      ]);
      expect(result.bytesInflated).toBe('before'.length + 'after'.length);
      expect(JSON.stringify(entries[1])).not.toContain('pwned');
    });

    it('a symbolic link', async () => {
      const zip = await buildZip([
        { name: 'link.txt', data: '../../etc/passwd', mode: 0o120777 },
        { name: 'a.txt', data: 'alpha' },
      ]);
      const { outcomes } = await read(zip);
      expect(outcomes).toEqual([
        ['link.txt', 'UNSAFE_PATH'],
        ['a.txt', 'accepted'],
      ]);
    });
  });

  it('refuses entries whose names break the upload name rules (INVALID_FILE_NAME), and reads the others', async () => {
    const long = `${'n'.repeat(2000)}.txt`; // 2,004 bytes: it crashed the local S3 engine and failed the job in AWS
    const deepPath = `${'folder/'.repeat(150)}fine.txt`; // a short file name under a 1,058-byte path
    const built = await buildZip([
      { name: 'before.txt', data: 'before' },
      { name: long, data: 'long' },
      { name: 'x', data: 'dot' },
      { name: 'uni___gnp.txt', data: 'rtl' },
      { name: `${'é'.repeat(125)}.txt`, data: 'bytes' },
      { name: deepPath, data: 'deep' },
      { name: 'README', data: 'an entry needs no extension' },
      { name: 'after.txt', data: 'after' },
    ]);
    const patched = renameEntry(renameEntry(built, 'x', '.'), 'uni___gnp.txt', 'uni\u202Egnp.txt');
    const { result, outcomes } = await read(patched);
    expect(result.error).toBeNull();
    expect(outcomes).toEqual([
      ['before.txt', 'accepted'],
      [long, 'INVALID_FILE_NAME'],
      ['.', 'INVALID_FILE_NAME'],
      [expect.stringContaining('\u202E'), 'INVALID_FILE_NAME'],
      [`${'é'.repeat(125)}.txt`, 'INVALID_FILE_NAME'],
      [deepPath, 'INVALID_FILE_NAME'],
      ['README', 'accepted'],
      ['after.txt', 'accepted'],
    ]);
  });

  it('refuses an encrypted entry (general purpose bit 0) without reading it', async () => {
    const built = await buildZip([
      { name: 'secret.txt', data: 'top secret '.repeat(100) },
      { name: 'public.txt', data: 'hello' },
    ]);
    const { result, entries, outcomes } = await read(markEncrypted(built, 'secret.txt'));
    expect(outcomes).toEqual([
      ['secret.txt', 'ENCRYPTED_ENTRY'],
      ['public.txt', 'accepted'],
    ]);
    expect(result).toEqual({ entries: 2, bytesInflated: 5, error: null });
    expect(entries[0]).toEqual({
      fileName: 'secret.txt',
      rejected: { code: 'ENCRYPTED_ENTRY', message: expect.stringContaining('encrypted') },
    });
  });

  it('refuses nested archives by name and by content, but reads ZIP-based documents such as DOCX', async () => {
    const inner = await buildZip([{ name: 'inner.txt', data: 'inside' }]);
    const zip = await buildZip([
      { name: 'inner.zip', data: inner },
      { name: 'backup.tar.gz', data: Buffer.from([0x1f, 0x8b, 8, 0, 0, 0]) },
      { name: 'disguised.txt', data: inner },
      { name: 'compressed.log', data: Buffer.concat([Buffer.from([0x1f, 0x8b, 8]), Buffer.alloc(20)]) },
      { name: 'report.docx', data: inner },
      { name: 'plain.txt', data: 'PK is just two letters' },
    ]);
    const { result, entries, outcomes } = await read(zip);
    expect(result.error).toBeNull();
    expect(outcomes).toEqual([
      ['inner.zip', 'NESTED_ARCHIVE'],
      ['backup.tar.gz', 'NESTED_ARCHIVE'],
      ['disguised.txt', 'NESTED_ARCHIVE'],
      ['compressed.log', 'NESTED_ARCHIVE'],
      ['report.docx', 'accepted'],
      ['plain.txt', 'accepted'],
    ]);
    expect(entries[2]).toMatchObject({ rejected: { message: expect.stringContaining('ZIP archive') } });
  });

  it('refuses an entry whose header declares more than the per-file limit without inflating it', async () => {
    const zip = await buildZip([
      { name: 'big.bin', data: incompressible(300 * 1024) },
      { name: 'small.txt', data: 'ok' },
    ]);
    const { result, outcomes } = await read(zip, { maxEntryBytes: 200 * 1024 });
    expect(outcomes).toEqual([
      ['big.bin', 'FILE_TOO_LARGE'],
      ['small.txt', 'accepted'],
    ]);
    expect(result).toEqual({ entries: 2, bytesInflated: 2, error: null });
  });

  it('refuses an entry whose header lies about its size (CORRUPT_ENTRY) and inflates no more than it declared', async () => {
    const built = await buildZip([
      { name: 'liar.bin', zeros: 20 * MB },
      { name: 'after.txt', data: 'after' },
    ]);
    const { result, outcomes } = await read(declareUncompressedSize(built, 'liar.bin', 1000));
    expect(outcomes).toEqual([
      ['liar.bin', 'CORRUPT_ENTRY'],
      ['after.txt', 'accepted'],
    ]);
    expect(result.error).toBeNull();
    expect(result.bytesInflated).toBeLessThan(MB);
  });

  it('refuses an entry whose compressed data is broken, and reads the next one', async () => {
    const built = await buildZip([
      { name: 'broken.txt', data: 'some text that deflates '.repeat(50) },
      { name: 'after.txt', data: 'after' },
    ]);
    const { outcomes } = await read(corruptData(built, 'broken.txt'));
    expect(outcomes).toEqual([
      ['broken.txt', 'CORRUPT_ENTRY'],
      ['after.txt', 'accepted'],
    ]);
  });

  it('refuses an entry with an unsupported compression method (e.g. bzip2)', async () => {
    const built = await buildZip([
      { name: 'a.txt', data: 'alpha' },
      { name: 'b.txt', data: 'beta' },
    ]);
    const { outcomes } = await read(setCompressionMethod(built, 'a.txt', 12));
    expect(outcomes).toEqual([
      ['a.txt', 'UNSUPPORTED_COMPRESSION'],
      ['b.txt', 'accepted'],
    ]);
  });

  it('refuses a second entry with the same path (DUPLICATE_ENTRY)', async () => {
    const zip = await buildZip([
      { name: 'a.txt', data: 'first' },
      { name: 'a.txt', data: 'second' },
    ]);
    const { entries, outcomes } = await read(zip);
    expect(outcomes).toEqual([
      ['a.txt', 'accepted'],
      ['a.txt', 'DUPLICATE_ENTRY'],
    ]);
    expect(entries[0]).toMatchObject({ bytes: Buffer.from('first') });
  });

  describe('zip bombs stop the read with ARCHIVE_TOO_LARGE', () => {
    it('stops a highly compressed entry once its ratio passes the cap, with the default limits', async () => {
      const zip = await buildZip([
        { name: 'first.txt', data: 'read before the bomb' },
        { name: 'bomb.bin', zeros: 20 * MB },
        { name: 'never.txt', data: 'not reached' },
      ]);
      const { result, outcomes } = await read(zip);
      expect(outcomes).toEqual([['first.txt', 'accepted']]);
      expect(result.error).toEqual({
        code: 'ARCHIVE_TOO_LARGE',
        message: expect.stringMatching(/^bomb\.bin: .*100 times its compressed size/),
      });
      // 20 MB of zeros deflate to ~20 KB: the read stopped at about 100 × 20 KB, far from 20 MB.
      expect(result.bytesInflated).toBeLessThan(3 * MB);
    });

    it('counts bytes while streaming and stops past the total, keeping what was read before', async () => {
      const zip = await buildZip(
        [1, 2, 3, 4, 5].map((n) => ({ name: `part-${n}.bin`, data: incompressible(300 * 1024, n) })),
      );
      const { result, outcomes } = await read(zip, { maxTotalBytes: MB });
      expect(outcomes).toEqual([
        ['part-1.bin', 'accepted'],
        ['part-2.bin', 'accepted'],
        ['part-3.bin', 'accepted'],
      ]);
      expect(result.error).toEqual({ code: 'ARCHIVE_TOO_LARGE', message: expect.stringContaining('part-4.bin') });
      expect(result.bytesInflated).toBeLessThanOrEqual(MB + 300 * 1024);
    });

    it('lets a small, very compressible file through (the ratio is judged only past the floor)', async () => {
      const zip = await buildZip([{ name: 'blank.txt', data: ' '.repeat(500 * 1024) }]);
      const { result, outcomes } = await read(zip);
      expect(result.error).toBeNull();
      expect(outcomes).toEqual([['blank.txt', 'accepted']]);
    });
  });

  it('refuses an archive with more files than the cap before reading any content', async () => {
    const files = Array.from({ length: 6 }, (_, i) => ({ name: `f${i}.txt`, data: `file ${i}` }));
    const zip = await buildZip([{ name: 'dir/', data: undefined }, { name: '.DS_Store', data: 'x' }, ...files]);
    const over = await read(zip, { maxEntries: 5 });
    expect(over.entries).toEqual([]);
    expect(over.result).toEqual({
      entries: 0,
      bytesInflated: 0,
      error: { code: 'ARCHIVE_TOO_LARGE', message: expect.stringContaining('more than 5 files') },
    });
    // Directories and junk do not count: exactly at the cap is fine.
    const atCap = await read(zip, { maxEntries: 6 });
    expect(atCap.result.error).toBeNull();
    expect(atCap.entries).toHaveLength(6);
  });

  describe('a file that is not a readable ZIP fails the whole read with INVALID_ARCHIVE', () => {
    it.each([
      ['plain text', async () => Buffer.from('this is not a zip file at all')],
      ['an empty file', async () => Buffer.alloc(0)],
      ['a truncated archive', async () => (await buildZip([{ name: 'a.txt', data: 'alpha' }])).subarray(0, 40)],
      [
        'a corrupt central directory',
        async () => {
          const zip = await buildZip([{ name: 'a.txt', data: 'alpha' }]);
          const eocd = zip.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
          const patched = Buffer.from(zip);
          patched.writeUInt32LE(0xdeadbeef, zip.readUInt32LE(eocd + 16));
          return patched;
        },
      ],
    ])('%s', async (_case, make) => {
      const { result, entries } = await read(await make());
      expect(entries).toEqual([]);
      expect(result.error).toEqual({ code: 'INVALID_ARCHIVE', message: expect.any(String) });
    });

    it('a path that does not exist', async () => {
      const { result } = await read(join(tmpdir(), 'no-such-archive.zip'));
      expect(result.error?.code).toBe('INVALID_ARCHIVE');
    });
  });

  it('reads an empty archive as no entries', async () => {
    const { result } = await read(await buildZip([]));
    expect(result).toEqual({ entries: 0, bytesInflated: 0, error: null });
  });

  it('propagates what onEntry throws, and stops reading', async () => {
    const zip = await buildZip([
      { name: 'a.txt', data: 'alpha' },
      { name: 'b.txt', data: 'beta' },
    ]);
    const seen: string[] = [];
    await expect(
      readZipArchive(zip, {}, async (entry) => {
        seen.push(entry.fileName);
        throw new Error('blob store down');
      }),
    ).rejects.toThrow('blob store down');
    expect(seen).toEqual(['a.txt']);
  });

  it('documents its defaults', () => {
    expect(DEFAULT_ZIP_LIMITS).toEqual({
      maxEntries: 2000,
      maxTotalBytes: 500 * MB,
      maxEntryBytes: 50 * MB,
      maxCompressionRatio: 100,
      ratioFloorBytes: MB,
      maxArchiveRatio: 100,
    });
  });

  it('stops an archive of many entries each just under the per-entry floor (the whole-archive ratio)', async () => {
    // 60 entries of 1 MiB of one letter: each under the per-entry ratio floor, together 60 MiB from ~70 KB.
    const zip = await buildZip(
      Array.from({ length: 60 }, (_, i) => ({ name: `part-${i}.txt`, data: Buffer.alloc(MB, 0x61) })),
    );
    const { result, outcomes } = await read(zip);
    expect(result.error).toMatchObject({
      code: 'ARCHIVE_TOO_LARGE',
      message: expect.stringContaining(`inflates more than 100 times its size (${zip.length} bytes)`),
    });
    // The read stopped at the entry that passed the ratio, long before the 60 MiB were inflated.
    expect(result.bytesInflated).toBeLessThanOrEqual(100 * zip.length + 2 * MB);
    expect(outcomes.length).toBeLessThan(60);
  });

  it('reads an ordinary archive of compressible text whole (its ratio is far under 100)', async () => {
    // 2.4 MB of words in a pseudo-random order: text as documents hold it compresses about 3 to 5 times.
    const words = ['harbour', 'opens', 'dawn', 'boats', 'leave', 'before', 'noon', 'market', 'closes', 'nine'];
    const seeded = incompressible(400_000);
    const text = Array.from(seeded, (byte) => words[byte % words.length]).join(' ');
    const { result, outcomes } = await read(await buildZip([{ name: 'a.txt', data: text }]));
    expect(result.error).toBeNull();
    expect(outcomes).toEqual([['a.txt', 'accepted']]);
  });
});

describe('openZipFileReader', () => {
  it('reads each file again by its path, one at a time', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'aps-zip-'));
    try {
      const path = join(dir, 'a.zip');
      await writeFile(
        path,
        await buildZip([
          { name: 'a.txt', data: 'alpha' },
          { name: 'docs/b.txt', data: 'beta' },
        ]),
      );
      const reader = await openZipFileReader(path, {});
      try {
        expect((await reader.read('docs/b.txt')).toString()).toBe('beta');
        expect((await reader.read('a.txt')).toString()).toBe('alpha');
        await expect(reader.read('missing.txt')).rejects.toThrow('no file missing.txt');
      } finally {
        reader.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
