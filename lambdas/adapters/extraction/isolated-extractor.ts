/**
 * Text extraction in a child process of its own, never on the thread that serves requests or runs the queue: a
 * hostile file (a parser that backtracks, inflates or recurses without end) costs that child, not the service.
 * The child is killed when it runs past the wall-clock limit or its resident memory passes the limit, and a child
 * that dies on a file (out of memory, a crash) fails that file. Every outcome is the document's own, so it ends
 * `failed` on its first delivery; only failing to start a child at all is an error worth a retry.
 *
 * The child is this very module run again (`fork(__filename)`): from source under tsx, and in the Lambda bundle as
 * the bundle file itself, so the function package needs no second entry point. It serves one file at a time and is
 * kept for the next while it stays healthy.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { read, readFileSync } from 'node:fs';
import { ProcessingError, type ProcessingErrorCode } from '#core/processing/errors';
import type { ExtractedText, TextExtractor } from '#ports/processing';
import { DocumentTextExtractor, type ExtractionCaps } from './text-extractor';

export interface ExtractionLimits extends ExtractionCaps {
  /** Wall-clock time one file may take (`EXTRACTION_TIMEOUT_SECONDS`). */
  readonly timeoutMs: number;
  /** Resident memory of the child (`EXTRACTION_MEMORY_MB`); also its V8 heap limit. */
  readonly memoryBytes: number;
}

/** Set in the child's environment: the module then serves extraction requests instead of being a library. */
const CHILD_FLAG = 'TEXT_EXTRACTION_CHILD';
const CAPS_VARIABLE = 'TEXT_EXTRACTION_CAPS';
/** The child's stdin, on which the files' bytes come. */
const STDIN = 0;
/** How often the child's resident memory is read. */
const MEMORY_POLL_MS = 50;

/**
 * A file to read. Its bytes do not travel in the message but after it on the child's stdin, `size` of them: the
 * message channel would serialize them into a copy of their own on this side and hand the child a view into the
 * message's buffer, which pdf.js would copy again; from the pipe the child reads them into a buffer of its own,
 * which pdf.js is then given without a copy.
 */
interface Request {
  readonly id: number;
  readonly size: number;
  readonly fileName: string;
  readonly contentType: string;
}

/**
 * The child's answer. `sameAsFile`: the text is exactly the file's bytes read as UTF-8 (a plain text or Markdown file
 * that extraction left as it was, the common case of a large text), so it does not cross back: the caller, which
 * holds the bytes, decodes them itself. A 50 MB text then is not serialized, piped and deserialized a second time
 * (the child's copy for the pipe, and the caller's read buffer beside its string).
 */
type Reply =
  | { readonly id: number; readonly ok: true; readonly text: string; readonly format: string }
  | { readonly id: number; readonly ok: true; readonly sameAsFile: true; readonly format: string }
  | { readonly id: number; readonly ok: false; readonly code: ProcessingErrorCode; readonly message: string };

export class IsolatedTextExtractor implements TextExtractor {
  private child: ChildProcess | undefined;
  /** The end of what the child wrote to stderr since its current file began: V8 says there why it gave up. */
  private stderrTail = '';
  private nextId = 1;
  /** One file at a time: requests queue behind each other, each with its own time limit once it starts. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly limits: ExtractionLimits) {}

  extract(bytes: Buffer, hints: { fileName: string; contentType: string }): Promise<ExtractedText> {
    const run = this.queue.then(() => this.extractNow(bytes, hints));
    // Not `run.catch(...)`: that would hold the text (a 50 MB file's, 50 MB) until the next file.
    this.queue = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  /** Ends the child (the runtime's shutdown; tests). */
  close(): void {
    this.child?.kill('SIGKILL');
    this.child = undefined;
  }

  private async extractNow(bytes: Buffer, hints: { fileName: string; contentType: string }): Promise<ExtractedText> {
    const child = this.child ?? (await this.start());
    this.stderrTail = '';
    try {
      const reply = await this.exchange(child, { id: this.nextId++, size: bytes.length, ...hints }, bytes);
      // Decoding UTF-8 is no parsing: the child has checked the file decodes to exactly this text.
      if (reply.ok) return { text: 'sameAsFile' in reply ? bytes.toString('utf8') : reply.text, format: reply.format };
      throw new ProcessingError(reply.code, reply.message);
    } finally {
      // A child that kept a large heap after a big file is replaced before it serves the next one.
      if (this.child === child && residentBytes(child) > this.limits.memoryBytes / 2) this.close();
    }
  }

  private exchange(child: ChildProcess, request: Request, bytes: Buffer): Promise<Reply> {
    return new Promise((resolve, reject) => {
      let settled = false;
      const finish = (outcome: () => void) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        clearInterval(poll);
        child.off('message', onMessage);
        child.off('close', onClose);
        outcome();
      };
      const kill = (error: ProcessingError) => {
        this.close();
        finish(() => reject(error));
      };
      const onMessage = (reply: Reply) => {
        if (reply.id === request.id) finish(() => resolve(reply));
      };
      // 'close', not 'exit': it comes once stderr is read to its end, so V8's last words are in the tail.
      const onClose = (code: number | null, signal: NodeJS.Signals | null) => {
        if (this.child === child) this.child = undefined;
        finish(() => reject(diedOn(code, signal, this.stderrTail, this.limits)));
      };
      const timer = setTimeout(
        () =>
          kill(
            new ProcessingError(
              'EXTRACTION_TIMEOUT',
              `Extracting the file's text took longer than ${this.limits.timeoutMs / 1000} s; it was stopped.`,
            ),
          ),
        this.limits.timeoutMs,
      );
      const poll = setInterval(() => {
        if (residentBytes(child) > this.limits.memoryBytes) kill(outOfMemory(this.limits));
      }, MEMORY_POLL_MS);
      child.on('message', onMessage);
      child.once('close', onClose);
      child.send(request, (error) => {
        if (error) finish(() => reject(error));
      });
      // A child that dies meanwhile fails the write; its 'close' reports why.
      child.stdin?.write(bytes);
    });
  }

  private start(): Promise<ChildProcess> {
    const child = fork(__filename, [], {
      execArgv: [...childExecArgv(), `--max-old-space-size=${Math.floor(this.limits.memoryBytes / 1024 / 1024)}`],
      env: { ...childEnvironment(), [CHILD_FLAG]: '1', [CAPS_VARIABLE]: JSON.stringify(capsOf(this.limits)) },
      serialization: 'advanced', // Buffers and long strings cross as they are, not as JSON
      stdio: ['pipe', 'ignore', 'pipe', 'ipc'],
    });
    // EPIPE when the child died on a file: the file's outcome comes from its 'close'.
    child.stdin?.on('error', () => {});
    // Always read, so a chatty parser can never fill the pipe and stall.
    child.stderr?.on('data', (chunk: Buffer) => {
      this.stderrTail = (this.stderrTail + chunk.toString('utf8')).slice(-4096);
    });
    return new Promise((resolve, reject) => {
      // The child says it is ready once its modules are loaded, so the first file's time limit is its own.
      const onReady = (message: unknown) => {
        if (message !== 'ready') return;
        cleanup();
        this.child = child;
        // An idle child must not keep the service's process alive; a file in flight holds its own timer.
        child.unref();
        child.channel?.unref();
        (child.stdin as { unref?: () => void } | null)?.unref?.();
        (child.stderr as { unref?: () => void } | null)?.unref?.();
        child.on('exit', () => {
          if (this.child === child) this.child = undefined;
        });
        resolve(child);
      };
      const onFailure = (reason: unknown) => {
        cleanup();
        child.kill('SIGKILL');
        reject(new Error(`The text extraction process could not start: ${String(reason)}`));
      };
      const onExit = (code: number | null, signal: NodeJS.Signals | null) => onFailure(`it exited (${code ?? signal})`);
      const cleanup = () => {
        child.off('message', onReady);
        child.off('error', onFailure);
        child.off('exit', onExit);
      };
      child.on('message', onReady);
      child.once('error', onFailure);
      child.once('exit', onExit);
    });
  }
}

function capsOf(limits: ExtractionLimits): ExtractionCaps {
  return {
    maxPdfPages: limits.maxPdfPages,
    maxDocxXmlBytes: limits.maxDocxXmlBytes,
    maxCharacters: limits.maxCharacters,
  };
}

/**
 * Node options for the child: this process's own (under tsx they load TypeScript), or tsx when this file is
 * TypeScript and nothing loads it (a jest worker).
 */
function childExecArgv(): string[] {
  const inherited = process.execArgv.filter((arg) => !arg.startsWith('--max-old-space-size'));
  const loadsTypeScript = inherited.some((arg) => arg.includes('tsx'));
  return __filename.endsWith('.ts') && !loadsTypeScript ? [...inherited, '--import', 'tsx'] : inherited;
}

/**
 * What the child inherits of this process's environment: what Node and its loaders need, glibc's malloc settings
 * (`MALLOC_*`: the local runtime starts its worker with two, lib/local/worker-process.ts, which took the 50 MB PDF's
 * child from 291–294 to 276–279 MB in the memory benchmark), and none of the service's configuration. A parser bug
 * that ran code in the child would find no AWS credentials, table names or tokens.
 */
function childEnvironment(): NodeJS.ProcessEnv {
  const kept = new Set(['PATH', 'HOME', 'TMPDIR', 'TMP', 'TEMP', 'LANG', 'LC_ALL', 'TZ']);
  const prefixes = ['NODE_', 'TSX_', 'MALLOC_'];
  return Object.fromEntries(
    Object.entries(process.env).filter(
      ([name]) => kept.has(name) || prefixes.some((prefix) => name.startsWith(prefix)),
    ),
  );
}

/** Resident memory of a process from /proc (Linux, as in Lambda); 0 where there is none (the heap limit remains). */
function residentBytes(child: ChildProcess): number {
  if (child.pid === undefined) return 0;
  try {
    const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
    const line = status.split('\n').find((entry) => entry.startsWith('VmRSS:'));
    return line ? Number.parseInt(line.slice('VmRSS:'.length), 10) * 1024 : 0;
  } catch {
    return 0;
  }
}

function outOfMemory(limits: ExtractionLimits): ProcessingError {
  return new ProcessingError(
    'FILE_TOO_LARGE',
    `Extracting the file's text needs more than ${Math.round(limits.memoryBytes / 1024 / 1024)} MB of memory; it was stopped.`,
  );
}

/** Why a child died while it read a file: its heap limit, or a crash of the parser on that file. */
function diedOn(code: number | null, signal: string | null, stderr: string, limits: ExtractionLimits) {
  if (/heap limit|out of memory/i.test(stderr)) return outOfMemory(limits);
  return new ProcessingError(
    'PARSE_ERROR',
    `The file could not be read: the extraction process stopped on it (${signal ?? `exit code ${code}`}).`,
  );
}

/** The child's side: extract each file it is sent, answer with the text or the ProcessingError. */
function serve(): void {
  // Stack traces here are never shown (failureOf keeps an exception's class only), and with source maps on (tsx;
  // NODE_OPTIONS in Lambda) Node would read pdf.js's maps as it loads and parse them into about 120 MB of heap.
  process.setSourceMapsEnabled(false);
  const caps = JSON.parse(process.env[CAPS_VARIABLE] ?? '{}') as Partial<ExtractionCaps>;
  // The bytes are this process's own copy: pdf.js may take their memory rather than copy it.
  const extractor = new DocumentTextExtractor(caps, { handOverInput: true });
  // Files are read in the order of their requests, one after the other (the caller sends one at a time).
  let reading: Promise<unknown> = Promise.resolve();
  process.on('message', async (request: Request) => {
    const input = reading.then(() => readInput(request.size));
    reading = input.catch(() => undefined);
    const bytes = await input.catch((error: unknown) => {
      // Past a failed read, where the next file begins on stdin is unknown: the caller replaces this child (its
      // 'close' fails the file). stdin ends only when the caller is gone.
      process.exit((error as NodeJS.ErrnoException).code === 'EOF' ? 0 : 1);
    });
    // A text file that extraction would leave as it is (a large text's common case) is answered from its bytes: its
    // text, 50 MB for a 50 MB file (100 MB of UTF-16 with one character past Latin-1), is never built here.
    const unchanged = extractor.unchangedTextFormat(bytes, request);
    if (unchanged) {
      process.send?.({ id: request.id, ok: true, sameAsFile: true, format: unchanged } satisfies Reply);
      return;
    }
    const reply = extractor.extract(bytes, request).then(
      ({ text, format }): Reply =>
        isUtf8Of(text, bytes)
          ? { id: request.id, ok: true, sameAsFile: true, format }
          : { id: request.id, ok: true, text, format },
      (error: unknown): Reply => ({ id: request.id, ok: false, ...failureOf(error) }),
    );
    void reply.then((answer) => process.send?.(answer));
  });
  // The parent going away ends the child.
  process.on('disconnect', () => process.exit(0));
  process.send?.('ready');
}

/**
 * A file's `size` bytes from stdin, read from its descriptor straight into a buffer of exactly that size. Through
 * `process.stdin` each read had a 64 KB buffer of its own, copied into the file's and left for the collector: when a
 * 50 MB file was whole, 20 MB of them still waited, and the malloc heap they had grown stayed resident (the 50 MB
 * text's child peaked 84 MB above its 1 KB run, not 50). The caller's end of the pipe is a blocking socket here (libuv
 * makes a child's stdio blocking), so `fs.read` waits on the thread pool for the bytes to come; `process.stdin` is never
 * touched, since opening it would make the descriptor non-blocking (EAGAIN, should some runtime do so, is retried).
 */
function readInput(size: number): Promise<Buffer> {
  const file = Buffer.allocUnsafeSlow(size);
  let filled = 0;
  return new Promise((resolve, reject) => {
    const next = (): void => {
      if (filled === size) {
        resolve(file);
        return;
      }
      read(STDIN, file, filled, size - filled, null, (error, count) => {
        if (error?.code === 'EAGAIN') setTimeout(next, 1);
        else if (error) reject(error);
        else if (count === 0) reject(Object.assign(new Error('stdin ended'), { code: 'EOF' }));
        else {
          filled += count;
          next();
        }
      });
    };
    next();
  });
}

/** Characters encoded at a time by isUtf8Of. */
const COMPARE_STEP = 1 << 16;

/**
 * Whether `bytes` are exactly the UTF-8 encoding of `text` (then decoding them gives `text` back), compared a slice
 * at a time, so no second copy of a large text is made. A slice never ends inside a surrogate pair, and one holding a
 * lone surrogate (which no decoder makes; it encodes as U+FFFD, which decodes as itself) does not match. A mismatch
 * only means the text is sent.
 */
export function isUtf8Of(text: string, bytes: Uint8Array): boolean {
  if (text.length > bytes.length) return false;
  const encoder = new TextEncoder();
  const scratch = new Uint8Array(COMPARE_STEP * 3);
  let offset = 0;
  for (let start = 0; start < text.length; ) {
    let end = Math.min(start + COMPARE_STEP, text.length);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end--;
    const slice = text.slice(start, end);
    if (!(slice as string & { isWellFormed(): boolean }).isWellFormed()) return false;
    const { written } = encoder.encodeInto(slice, scratch);
    if (offset + written > bytes.length) return false;
    if (Buffer.compare(scratch.subarray(0, written), bytes.subarray(offset, offset + written)) !== 0) return false;
    offset += written;
    start = end;
  }
  return offset === bytes.length;
}

/**
 * Any exception of a parser is the file's: a ProcessingError keeps its code; anything else (a RangeError from a
 * recursive parser, a TypeError from a damaged structure) is PARSE_ERROR, named by its class only, since parser
 * messages may quote the content.
 */
function failureOf(error: unknown): { code: ProcessingErrorCode; message: string } {
  if (error instanceof ProcessingError) return { code: error.code, message: error.message };
  if (error instanceof RangeError && /call stack/i.test(error.message)) {
    return { code: 'PARSE_ERROR', message: 'The file could not be read: its structure is nested too deeply.' };
  }
  const kind = error instanceof Error ? error.name : typeof error;
  return { code: 'PARSE_ERROR', message: `The file could not be read: its parser failed (${kind}).` };
}

if (process.env[CHILD_FLAG] === '1' && typeof process.send === 'function') serve();
