/**
 * PDF text through pdfjs-dist (legacy build, the one for Node). pdfjs-dist is ESM only: it is loaded with a
 * dynamic `import()` on the first PDF and kept for the life of the process. Jest's module system cannot load it,
 * so the tests extract PDFs in a child process (`test/helpers/extract-in-child.ts`).
 */
import { readFileSync } from 'node:fs';
import module from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ProcessingError } from '#core/processing/errors';

type PdfJs = typeof import('pdfjs-dist/legacy/build/pdf.mjs');

let pdfjs: Promise<PdfJs> | undefined;

/**
 * A failure here is the service's, not the document's: it is not turned into a ProcessingError. pdfjs then
 * imports its worker module from beside its own file and runs it on this thread. Both need the package installed
 * as a node module with `@napi-rs/canvas` (pdfjs-dist requires its DOMMatrix when it loads): bundled into a
 * CommonJS file by esbuild it fails to load (docs/processing.md).
 */
function loadPdfJs(): Promise<PdfJs> {
  if (!pdfjs) loadModulesAsTheyAre(packageDirectory());
  pdfjs ??= import('pdfjs-dist/legacy/build/pdf.mjs');
  return pdfjs;
}

/**
 * pdfjs-dist's modules are loaded as they are on disk, past any loader that would transform them. Under tsx (the
 * local runtime, tests, benchmarks) every module with a dynamic `import()` is rewritten with a source map at the
 * finest resolution: for pdf.js's 2.5 MB of JavaScript that cost the extraction child about 200 MB before the first
 * page (about 320 MB resident after loading it, against 115 MB as they are). Plain JavaScript needs no loader; where
 * there is none (the Lambda bundle) this changes nothing. The hook API is Node ≥ 22.15; without it, modules load as
 * before.
 */
function loadModulesAsTheyAre(packageRoot: string | undefined): void {
  if (!packageRoot || typeof module.registerHooks !== 'function') return;
  const root = `${packageRoot}${path.sep}`;
  module.registerHooks({
    load(url, context, nextLoad) {
      if (!url.startsWith('file:') || !url.endsWith('.mjs')) return nextLoad(url, context);
      const file = fileURLToPath(url);
      if (!file.startsWith(root)) return nextLoad(url, context);
      return { format: 'module', source: readFileSync(file), shortCircuit: true };
    },
  });
}

/**
 * Where pdfjs-dist's data files are: character maps (the text of many CJK PDFs needs them) and standard font
 * data. Without them (the package not on disk), PDFs using predefined CJK character maps lose their text; all
 * others read the same.
 */
function packageDirectory(): string | undefined {
  try {
    return path.dirname(require.resolve('pdfjs-dist/package.json'));
  } catch {
    return undefined;
  }
}

/** A text gap larger than this many line heights starts a new paragraph. */
const PARAGRAPH_GAP = 1.8;

/**
 * Pages read between two `cleanup()`s of the document, which empty pdf.js's caches of the pages read so far (fonts
 * and their glyphs, page dictionaries, images): kept for the whole document they held about 180 MB of the child's
 * peak for the 2,000 pages of the benchmark's PDF, against 262 MB resident in all with this; the fonts a later page
 * needs again are read again, which cost no measurable time there.
 */
const PAGES_BETWEEN_CLEANUPS = 50;

/** Most pages read from one PDF: a page tree can list one page hundreds of thousands of times in a megabyte. */
export const MAX_PDF_PAGES = 2000;

export interface PdfLimits {
  readonly maxPages: number;
  /** Most characters of text; reading stops at the first page past it. */
  readonly maxCharacters: number;
  /**
   * pdf.js may take the bytes' memory (it transfers it to its worker, leaving `bytes` empty) rather than a copy of
   * them: 50 MB less for a 50 MB PDF. Only where the bytes fill their ArrayBuffer (pdf.js takes all of it).
   */
  readonly handOver?: boolean;
}

export async function pdfToText(bytes: Buffer, limits: PdfLimits): Promise<string> {
  const { getDocument } = await loadPdfJs();
  const packageRoot = packageDirectory();
  const task = getDocument({
    data:
      limits.handOver && bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength
        ? new Uint8Array(bytes.buffer)
        : new Uint8Array(bytes),
    ...(packageRoot && {
      cMapUrl: `${path.join(packageRoot, 'cmaps')}${path.sep}`,
      cMapPacked: true,
      standardFontDataUrl: `${path.join(packageRoot, 'standard_fonts')}${path.sep}`,
    }),
    isEvalSupported: false,
    disableFontFace: true,
    useSystemFonts: false,
    verbosity: 0, // errors only: pdfjs otherwise prints warnings about fonts of damaged files on stdout
  });
  try {
    const document = await task.promise;
    if (document.numPages > limits.maxPages) {
      throw new ProcessingError(
        'FILE_TOO_LARGE',
        `The PDF has ${document.numPages} pages; the limit is ${limits.maxPages} pages.`,
      );
    }
    const pages: string[] = [];
    let characters = 0;
    for (let number = 1; number <= document.numPages; number++) {
      const page = await document.getPage(number);
      const content = await page.getTextContent();
      const text = pageText(content.items as readonly TextRun[]);
      page.cleanup();
      characters += text.length;
      if (characters > limits.maxCharacters) {
        throw new ProcessingError(
          'FILE_TOO_LARGE',
          `The PDF's text passes the limit of ${limits.maxCharacters} characters at page ${number}.`,
        );
      }
      pages.push(text);
      if (number % PAGES_BETWEEN_CLEANUPS === 0) await document.cleanup();
    }
    return pages.join('\n\n');
  } catch (error) {
    if (error instanceof ProcessingError) throw error;
    // pdfjs-dist does not export PasswordException: its name is the stable part of its API.
    if (error instanceof Error && error.name === 'PasswordException') {
      throw new ProcessingError('PARSE_ERROR', 'The PDF is password-protected: its text cannot be read.');
    }
    throw new ProcessingError('PARSE_ERROR', 'The PDF cannot be read: its structure is damaged.');
  } finally {
    await task.destroy();
  }
}

/** A TextItem, or a TextMarkedContent (no `str`): the fields read here. */
interface TextRun {
  readonly str?: string;
  readonly hasEOL?: boolean;
  readonly height?: number;
  readonly transform?: number[];
}

/** Lines as pdfjs reports them (`hasEOL`); a larger vertical gap between lines becomes a paragraph break. */
function pageText(items: readonly TextRun[]): string {
  let text = '';
  let lineY: number | undefined;
  let lineHeight = 0;
  let atLineStart = true;
  for (const item of items) {
    if (item.str === undefined) continue; // marked-content boundaries carry no text
    const y = item.transform?.[5];
    if (atLineStart && item.str !== '' && y !== undefined) {
      if (lineY !== undefined && lineHeight > 0 && lineY - y > lineHeight * PARAGRAPH_GAP) text += '\n';
      lineY = y;
      lineHeight = item.height ?? 0;
      atLineStart = false;
    }
    text += item.str;
    if (item.hasEOL) {
      text += '\n';
      atLineStart = true;
    }
  }
  return text;
}
