/**
 * The texts of the ingestion benchmark: English-like prose from a seeded generator, so every run indexes the same
 * bytes without any download. Sentences and paragraphs give the chunker real breaks to cut at.
 */
import { closeSync, openSync, writeSync } from 'node:fs';

const WORDS = (
  'the of and to in is that for it as with was on be by at this are from or have an they which one you had not ' +
  'but what all were when we there can been has more if will so no out up into them some could time than first ' +
  'water people other about many then these would like each word how said use way find long make day thing see ' +
  'him two look write number sound most over know call come made may part router switch modem firmware ' +
  'network cable port signal device power light button reset update customer support warranty invoice refund ' +
  'account payment order delivery shipment battery charger screen display setting option manual guide install ' +
  'configure connect restart problem error message warning status report service contract policy period month ' +
  'week hour minute office team manager engineer request ticket answer question product model version release ' +
  'security password access token user group role permission backup storage disk memory server client browser ' +
  'green red blue yellow quiet loud fast slow small large new old early late simple careful daily nightly'
).split(' ');

/** mulberry32: a small, fast PRNG; the same seed gives the same sequence on every machine. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function integer(random: () => number, min: number, max: number): number {
  return min + Math.floor(random() * (max - min + 1));
}

function sentence(random: () => number): string {
  const count = integer(random, 6, 16);
  const words: string[] = [];
  for (let i = 0; i < count; i++) words.push(WORDS[Math.floor(random() * WORDS.length)]);
  words[0] = words[0][0].toUpperCase() + words[0].slice(1);
  if (count > 9 && random() < 0.3) words[integer(random, 3, count - 3)] += ',';
  return `${words.join(' ')}${random() < 0.1 ? '?' : '.'}`;
}

export function paragraph(random: () => number): string {
  const sentences: string[] = [];
  for (let i = integer(random, 2, 5); i > 0; i--) sentences.push(sentence(random));
  return sentences.join(' ');
}

export interface CorpusFile {
  readonly fileName: string;
  readonly bytes: Buffer;
}

/** `count` documents of 1 to 3 KB each: a title line and paragraphs, cut after the paragraph that reaches the size. */
export function smallDocuments(count: number, seed = 20250106): CorpusFile[] {
  const random = seededRandom(seed);
  return Array.from({ length: count }, (_, i) => {
    const target = integer(random, 1024, 3072);
    const parts = [`Notes on the ${WORDS[i % WORDS.length]} ${WORDS[(i * 7 + 3) % WORDS.length]}, number ${i + 1}`];
    let length = parts[0].length;
    while (length < target) {
      const next = paragraph(random);
      parts.push(next);
      length += next.length + 2;
    }
    return { fileName: `doc-${String(i + 1).padStart(4, '0')}.txt`, bytes: Buffer.from(parts.join('\n\n'), 'utf8') };
  });
}

/** Writes exactly `bytes` bytes of paragraphs to `path` (ASCII, so bytes = characters). */
export function writeLargeDocument(path: string, bytes: number, seed = 50): void {
  const random = seededRandom(seed);
  const fd = openSync(path, 'w');
  try {
    let written = 0;
    while (written < bytes) {
      const block: string[] = [];
      let blockLength = 0;
      while (blockLength < 1 << 20) {
        const next = `${paragraph(random)}\n\n`;
        block.push(next);
        blockLength += next.length;
      }
      const text = block.join('').slice(0, bytes - written);
      writeSync(fd, text, null, 'latin1');
      written += text.length;
    }
  } finally {
    closeSync(fd);
  }
}
