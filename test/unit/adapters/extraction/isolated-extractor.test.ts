/**
 * The extraction child process bounds what a hostile file can cost (issue 22): whatever happens inside, the caller
 * gets a ProcessingError with a documented code, and the next file is read by a fresh child. The files are those of
 * the hostile-input proof suite, at sizes that keep this test short.
 */
import { readFileSync } from 'node:fs';
import { IsolatedTextExtractor, isUtf8Of } from '#adapters/extraction/isolated-extractor';
import { DEFAULT_EXTRACTION_CAPS, DocumentTextExtractor } from '#adapters/extraction/text-extractor';
import { ProcessingError } from '#core/processing/errors';
import { pdfOf } from '../../../helpers/office-files';
import {
  deeplyNestedHtml,
  docxInflationBomb,
  docxLyingSizes,
  pdfInflationBomb,
  pdfRepeatedPage,
  regexHtmlBomb,
} from '../../../proof/hostile-files';

const MB = 1024 * 1024;
const LIMITS = { ...DEFAULT_EXTRACTION_CAPS, timeoutMs: 30_000, memoryBytes: 768 * MB };

async function failureOf(extractor: IsolatedTextExtractor, file: { bytes: Buffer; fileName: string }) {
  const outcome = await extractor.extract(file.bytes, { fileName: file.fileName, contentType: 'text/plain' }).then(
    (result) => result,
    (error: unknown) => error,
  );
  expect(outcome).toBeInstanceOf(ProcessingError);
  return outcome as ProcessingError;
}

describe('IsolatedTextExtractor', () => {
  const extractor = new IsolatedTextExtractor(LIMITS);
  afterAll(() => extractor.close());

  it('extracts an ordinary file in the child', async () => {
    const result = await extractor.extract(Buffer.from('Hold the power button for five seconds.'), {
      fileName: 'guide.txt',
      contentType: 'text/plain',
    });
    expect(result).toEqual({ format: 'text', text: 'Hold the power button for five seconds.' });
  });

  it("gives the child none of the service's configuration (no AWS credentials, no table names), but malloc's settings", async () => {
    const extractor = new IsolatedTextExtractor(LIMITS);
    const saved = { ...process.env };
    Object.assign(process.env, {
      AWS_SECRET_ACCESS_KEY: 'not-for-parsers',
      DOCUMENTS_TABLE: 'documents',
      MALLOC_ARENA_MAX: '2',
    });
    try {
      const before = new Set(extractionChildrenOf(process.pid));
      await extractor.extract(Buffer.from('text'), { fileName: 'a.txt', contentType: 'text/plain' });
      const [child] = extractionChildrenOf(process.pid).filter((pid) => !before.has(pid));
      const environment = readFileSync(`/proc/${child}/environ`, 'utf8').split('\0');
      expect(environment.some((entry) => entry.startsWith('PATH='))).toBe(true);
      expect(environment.filter((entry) => /^(AWS_|DOCUMENTS_TABLE)/.test(entry))).toEqual([]);
      expect(environment).toContain('MALLOC_ARENA_MAX=2');
    } finally {
      process.env = saved;
      extractor.close();
    }
  });

  it('reads 40 empty HTML comments (281 bytes, hours for the old regex) as text', async () => {
    const file = regexHtmlBomb(40);
    const result = await extractor.extract(file.bytes, { fileName: file.fileName, contentType: 'text/plain' });
    expect(result.format).toBe('text');
  });

  it('fails HTML nested 100,000 deep with PARSE_ERROR (a RangeError inside the parser), not a retry', async () => {
    const error = await failureOf(extractor, deeplyNestedHtml(100_000));
    expect(error).toMatchObject({ code: 'PARSE_ERROR', message: expect.stringContaining('nested too deeply') });
  });

  it('fails a DOCX whose XML unpacks past the cap with FILE_TOO_LARGE before mammoth reads it', async () => {
    expect(await failureOf(extractor, await docxInflationBomb(12))).toMatchObject({ code: 'FILE_TOO_LARGE' });
  });

  it('fails a DOCX that lies about its sizes with PARSE_ERROR (the inflated bytes are counted, not trusted)', async () => {
    expect(await failureOf(extractor, await docxLyingSizes(12))).toMatchObject({ code: 'PARSE_ERROR' });
  });

  it('fails a PDF whose page tree lists one page 200,000 times with FILE_TOO_LARGE', async () => {
    const error = await failureOf(extractor, pdfRepeatedPage(200_000));
    expect(error).toMatchObject({ code: 'FILE_TOO_LARGE', message: expect.stringContaining('200000 pages') });
  });

  it('still reads an ordinary PDF after all that (the child was replaced where it had to be)', async () => {
    const { PDFDocument, StandardFonts } = await import('pdf-lib');
    const pdf = await PDFDocument.create();
    const font = await pdf.embedFont(StandardFonts.Helvetica);
    pdf.addPage([595, 842]).drawText('The harbour opens at dawn.', { x: 72, y: 770, size: 12, font });
    const result = await extractor.extract(Buffer.from(await pdf.save()), {
      fileName: 'harbour.pdf',
      contentType: 'application/pdf',
    });
    expect(result).toEqual({ format: 'pdf', text: 'The harbour opens at dawn.' });
  });

  it("reads every page of a PDF across its caches' cleanups (every 50 pages), and the files queued behind it whole", async () => {
    const lines = Array.from({ length: 120 }, (_, i) => `Berth ${i + 1} is reserved for the ferry.`);
    const text = 'A second file, sent on the same pipe right after the first.';
    const [pdf, after, again] = await Promise.all([
      extractor.extract(await pdfOf(lines), { fileName: 'berths.pdf', contentType: 'application/pdf' }),
      extractor.extract(Buffer.from(text), { fileName: 'after.txt', contentType: 'text/plain' }),
      extractor.extract(await pdfOf(lines.slice(0, 3)), { fileName: 'short.pdf', contentType: 'application/pdf' }),
    ]);
    expect(pdf).toEqual({ format: 'pdf', text: lines.join('\n\n') });
    expect(after).toEqual({ format: 'text', text });
    expect(again).toEqual({ format: 'pdf', text: lines.slice(0, 3).join('\n\n') });
  });
});

describe('a text that is the file itself does not cross back', () => {
  // A surrogate pair across the comparison's 65,536-character step, and text on both sides of it.
  const straddling = `${'a'.repeat(65_535)}\u{1F600} pump café ${'b'.repeat(70_000)}`;

  it('isUtf8Of: the exact UTF-8 of the text, and nothing else', () => {
    expect(isUtf8Of(straddling, Buffer.from(straddling, 'utf8'))).toBe(true);
    expect(isUtf8Of('plain text', Buffer.from('plain text'))).toBe(true);
    expect(isUtf8Of('plain text', Buffer.from('plain  text'))).toBe(false);
    expect(isUtf8Of('plain text', Buffer.from('plain tex'))).toBe(false);
    expect(isUtf8Of('text', Buffer.from('\ufefftext', 'utf8'))).toBe(false);
    // A lone surrogate encodes as U+FFFD, which decodes as U+FFFD: not the same text.
    expect(isUtf8Of('a\ud800b', Buffer.from('a\ufffdb', 'utf8'))).toBe(false);
  });

  it('gives the same text as extraction on this thread, whether or not the file is its text', async () => {
    const extractor = new IsolatedTextExtractor(LIMITS);
    const direct = new DocumentTextExtractor();
    try {
      const files = [
        straddling, // the file's own UTF-8: not sent back
        'Line one\r\nLine two\t\tend\n\n\n\nNext paragraph', // changed by extraction: sent back
        '\ufeffWith a byte order mark',
        'Grüße aus Köln, 東京 and 😀',
      ];
      for (const file of files) {
        const bytes = Buffer.from(file, 'utf8');
        const hints = { fileName: 'notes.txt', contentType: 'text/plain' };
        expect(await extractor.extract(bytes, hints)).toEqual(await direct.extract(bytes, hints));
      }
      const latin1 = Buffer.from([0x43, 0x61, 0x66, 0xe9, 0x20, 0x6f, 0x6b]); // "Café ok" in Windows-1252
      expect(await extractor.extract(latin1, { fileName: 'a.txt', contentType: 'text/plain' })).toEqual({
        format: 'text',
        text: 'Café ok',
      });
    } finally {
      extractor.close();
    }
  });
});

describe('IsolatedTextExtractor, large files', () => {
  it("sends a large file's bytes on the child's stdin across many pipe reads, with the same text as extraction here", async () => {
    const extractor = new IsolatedTextExtractor(LIMITS);
    const direct = new DocumentTextExtractor();
    try {
      const sentence = 'Hold the power button for five seconds, then release it.\n\n';
      const repeats = Math.ceil((5 * MB) / sentence.length);
      const same = Buffer.from(sentence.repeat(repeats), 'utf8');
      const changed = Buffer.from(`${sentence.repeat(repeats)}\r\nend\t\tof it`);
      const hints = { fileName: 'manual.txt', contentType: 'text/plain' };
      // Queued at once: each file's bytes follow the one before on the same pipe.
      const [first, second, small] = await Promise.all([
        extractor.extract(same, hints),
        extractor.extract(changed, hints),
        extractor.extract(Buffer.from('small'), { fileName: 'a.txt', contentType: 'text/plain' }),
      ]);
      expect(first).toEqual(await direct.extract(same, hints));
      expect(second).toEqual(await direct.extract(changed, hints));
      expect(small).toEqual({ format: 'text', text: 'small' });
    } finally {
      extractor.close();
    }
  });
});

describe('IsolatedTextExtractor limits', () => {
  it('stops a PDF whose content stream inflates past the memory limit: FILE_TOO_LARGE', async () => {
    const extractor = new IsolatedTextExtractor({ ...LIMITS, memoryBytes: 400 * MB, timeoutMs: 120_000 });
    try {
      const error = await failureOf(extractor, await pdfInflationBomb(350));
      expect(error).toMatchObject({ code: 'FILE_TOO_LARGE', message: expect.stringContaining('400 MB of memory') });
    } finally {
      extractor.close();
    }
  });

  it('stops an extraction past the time limit: EXTRACTION_TIMEOUT, and the next file is read', async () => {
    const extractor = new IsolatedTextExtractor({ ...LIMITS, memoryBytes: 8192 * MB, timeoutMs: 1_500 });
    try {
      const error = await failureOf(extractor, await pdfInflationBomb(350));
      expect(error).toMatchObject({ code: 'EXTRACTION_TIMEOUT' });
      const next = await extractor.extract(Buffer.from('after the timeout'), {
        fileName: 'a.txt',
        contentType: 'text/plain',
      });
      expect(next.text).toBe('after the timeout');
    } finally {
      extractor.close();
    }
  });

  it('fails a DOCX whose parse passes the memory limit with FILE_TOO_LARGE (the child dies, the caller does not)', async () => {
    // 30 MiB of XML allowed through: mammoth needs about 3 GB for it.
    const extractor = new IsolatedTextExtractor({ ...LIMITS, maxDocxXmlBytes: 40 * MB, memoryBytes: 300 * MB });
    try {
      expect(await failureOf(extractor, await docxInflationBomb(30))).toMatchObject({ code: 'FILE_TOO_LARGE' });
    } finally {
      extractor.close();
    }
  });

  it('fails the file a child crashed on with PARSE_ERROR, and reads the next one in a new child', async () => {
    const extractor = new IsolatedTextExtractor({ ...LIMITS, memoryBytes: 8192 * MB, timeoutMs: 120_000 });
    try {
      const outcome = failureOf(extractor, await pdfInflationBomb(350));
      const child = await busyChildOf(process.pid);
      process.kill(child, 'SIGKILL'); // as a segfault in a native parser would end it
      expect(await outcome).toMatchObject({ code: 'PARSE_ERROR', message: expect.stringContaining('SIGKILL') });
      const next = await extractor.extract(Buffer.from('after the crash'), { fileName: 'a.txt', contentType: '' });
      expect(next.text).toBe('after the crash');
    } finally {
      extractor.close();
    }
  });
});

/** The extraction children of `parent` (this module run with the child flag). */
function extractionChildrenOf(parent: number): number[] {
  const children = readFileSync(`/proc/${parent}/task/${parent}/children`, 'utf8').trim().split(/\s+/);
  return children
    .filter(Boolean)
    .map(Number)
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('isolated-extractor');
      } catch {
        return false; // gone meanwhile
      }
    });
}

/** The extraction child of `parent` once it is busy with a file (its memory has grown past 300 MB). */
async function busyChildOf(parent: number): Promise<number> {
  for (let attempt = 0; attempt < 600; attempt++) {
    for (const pid of extractionChildrenOf(parent)) {
      try {
        const rss = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
        if (rss > 300 * 1024) return pid;
      } catch {
        // gone meanwhile
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('no busy extraction child appeared');
}
