/**
 * Runs DocumentTextExtractor outside jest, whose module system cannot load the ESM-only pdfjs-dist.
 * stdin: JSON `[{ bytes (base64), fileName, contentType }]`; stdout: JSON, one outcome per file, in order.
 * Used by extraction.test.ts as `node --import tsx test/helpers/extract-in-child.ts`.
 */
import { DocumentTextExtractor } from '#adapters/extraction/text-extractor';

export interface ChildInput {
  readonly bytes: string;
  readonly fileName: string;
  readonly contentType: string;
}

export type ChildOutcome =
  | { readonly ok: true; readonly text: string; readonly format: string; readonly milliseconds: number }
  | { readonly ok: false; readonly name: string; readonly code?: string; readonly message: string };

async function main(): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  const inputs = JSON.parse(Buffer.concat(chunks).toString('utf8')) as ChildInput[];
  const extractor = new DocumentTextExtractor();
  const outcomes: ChildOutcome[] = [];
  for (const { bytes, fileName, contentType } of inputs) {
    const started = performance.now();
    try {
      const { text, format } = await extractor.extract(Buffer.from(bytes, 'base64'), { fileName, contentType });
      outcomes.push({ ok: true, text, format, milliseconds: performance.now() - started });
    } catch (error) {
      const { name, message, code } = error as Error & { code?: string };
      outcomes.push({ ok: false, name, code, message });
    }
  }
  process.stdout.write(JSON.stringify(outcomes));
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
