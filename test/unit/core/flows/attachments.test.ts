/**
 * Images attached to messages (core/flows/attachments.ts), below the API: the request schema's rules, the bytes'
 * signature deciding the type, a URL read through the real outbound guard from a loopback server (its size counted
 * as it arrives, whatever its headers say; a private address refused unless allowed), and which stored images the
 * model context reads back.
 */
import { GuardedImageDownloader } from '#adapters/network/guarded-download';
import { ValidationError } from '#core/errors';
import {
  ATTACHMENT_MAX_BYTES,
  ATTACHMENT_SHOWN_MS,
  type AttachmentInput,
  attachmentKey,
  imageTypeOf,
  loadContextImages,
  MODEL_CONTEXT_MAX_IMAGES,
  receiveAttachments,
  storeAttachments,
} from '#core/flows/attachments';
import type { SessionMessage } from '#core/flows/session';
import { parseInput } from '#core/validation';
import { webhookSchema } from '#handlers/http/flows/schemas';
import { inMemoryBlobStore } from '../../../helpers/blobs';
import { GIF, type ImageServer, JPEG, PNG, pngOfSize, startImageServer, WEBP } from '../../../helpers/images';

const AGENT = '6f1d3c2a-9b8e-4f7a-8c5d-2e1b0a9f8e7d';
const allowed = new GuardedImageDownloader({ allowPrivateNetwork: true });
let images: ImageServer;

beforeAll(async () => {
  images = await startImageServer();
});
afterAll(() => images.close());

/** The ValidationError's details, or a failure when it resolved. */
async function problemsOf(inputs: AttachmentInput[], downloader = allowed) {
  try {
    await receiveAttachments(downloader, inputs);
  } catch (error) {
    if (error instanceof ValidationError) return error.details.map(({ field, rule }) => ({ field, rule }));
    throw error;
  }
  throw new Error('expected a ValidationError');
}

/** The details of the 400 the API answers, by the same rules: [] when the schema lets the body through. */
function schemaProblems(attachments: unknown) {
  try {
    parseInput(webhookSchema, { agentId: AGENT, environment: 'production', triggerName: 'Look', attachments });
    return [];
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    return error.details.map(({ field, rule }) => ({ field, rule }));
  }
}

describe('imageTypeOf', () => {
  it('tells the four formats by their signature and nothing else', () => {
    expect([PNG, JPEG, GIF, WEBP].map(imageTypeOf)).toEqual(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);
    expect(imageTypeOf(Buffer.from('<html>not an image</html>'))).toBeUndefined();
    expect(imageTypeOf(Buffer.from('RIFF\0\0\0\0WAVEfmt '))).toBeUndefined();
    expect(imageTypeOf(PNG.subarray(0, 7))).toBeUndefined();
  });
});

describe('the request schema', () => {
  it('refuses more than 4 attachments, an unknown media type, bad base64, both or no source, a URL that is not http(s)', () => {
    const png = { type: 'image', mediaType: 'image/png', data: PNG.toString('base64') };
    expect(schemaProblems([png, png, png, png, png])).toEqual([{ field: 'attachments', rule: 'maxItems' }]);
    expect(
      schemaProblems([
        { ...png, mediaType: 'image/bmp' },
        { ...png, data: `data:image/png;base64,${png.data}` },
        { ...png, url: 'https://example.com/a.png' },
        { type: 'image', mediaType: 'image/png' },
      ]),
    ).toEqual([
      { field: 'attachments.0.mediaType', rule: 'attachment.mediaType' },
      { field: 'attachments.1.data', rule: 'attachment.base64' },
      { field: 'attachments.2', rule: 'attachment.source' },
      { field: 'attachments.3', rule: 'attachment.source' },
    ]);
    expect(
      schemaProblems([
        { type: 'image', url: 'file:///etc/passwd' },
        { type: 'image', data: png.data },
        { type: 'video', url: 'https://example.com/a.mp4' },
      ]),
    ).toEqual([
      { field: 'attachments.0.url', rule: 'attachment.url' },
      { field: 'attachments.1.mediaType', rule: 'required' },
      { field: 'attachments.2.type', rule: 'enum' },
    ]);
  });

  it('refuses data that decodes to more than 5 MiB, counted from its length', () => {
    const over = Buffer.alloc(ATTACHMENT_MAX_BYTES + 1).toString('base64');
    const limit = Buffer.alloc(ATTACHMENT_MAX_BYTES).toString('base64');
    expect(schemaProblems([{ type: 'image', mediaType: 'image/png', data: over }])).toEqual([
      { field: 'attachments.0.data', rule: 'attachment.maxBytes' },
    ]);
    expect(schemaProblems([{ type: 'image', mediaType: 'image/png', data: limit }])).toEqual([]);
  });

  it('does not count attachments in the 64 KB payload that becomes memory', () => {
    const big = pngOfSize(100 * 1024).toString('base64');
    expect(schemaProblems([{ type: 'image', mediaType: 'image/png', data: big }])).toEqual([]);
  });
});

describe('receiveAttachments', () => {
  it('decodes data and takes the type from the bytes, which must agree with the declared one', async () => {
    const received = await receiveAttachments(allowed, [
      { type: 'image', mediaType: 'image/gif', data: GIF.toString('base64') },
    ]);
    expect(received).toEqual([{ mediaType: 'image/gif', bytes: GIF, source: 'data' }]);
    expect(
      await problemsOf([
        { type: 'image', mediaType: 'image/jpeg', data: PNG.toString('base64') },
        { type: 'image', mediaType: 'image/png', data: Buffer.from('%PDF-1.7').toString('base64') },
      ]),
    ).toEqual([
      { field: 'attachments.0.data', rule: 'attachment.mediaType' },
      { field: 'attachments.1.data', rule: 'attachment.mediaType' },
    ]);
  });

  it('reads a URL by its bytes, not its Content-Type, and follows a redirect', async () => {
    images.serve('/photo', { headers: { 'content-type': 'application/octet-stream' }, body: JPEG });
    images.serve('/moved', { status: 302, headers: { location: '/photo' } });
    const received = await receiveAttachments(allowed, [{ type: 'image', url: `${images.url}/moved` }]);
    expect(received).toEqual([{ mediaType: 'image/jpeg', bytes: JPEG, source: 'url' }]);
  });

  it('refuses a URL whose answer is not an image, whatever its header says, and one that answers 404', async () => {
    images.serve('/fake.png', { headers: { 'content-type': 'image/png' }, body: Buffer.from('<html></html>') });
    expect(
      await problemsOf([
        { type: 'image', url: `${images.url}/fake.png` },
        { type: 'image', url: `${images.url}/missing.png` },
      ]),
    ).toEqual([
      { field: 'attachments.0.url', rule: 'attachment.mediaType' },
      { field: 'attachments.1.url', rule: 'attachment.fetch' },
    ]);
  });

  it('stops reading a URL past 5 MiB, with or without a Content-Length', async () => {
    const big = pngOfSize(ATTACHMENT_MAX_BYTES + 1);
    images.serve('/chunked.png', { body: big });
    images.serve('/declared.png', { headers: { 'content-length': String(big.length) }, body: big });
    images.serve('/exact.png', { body: pngOfSize(ATTACHMENT_MAX_BYTES) });
    expect(
      await problemsOf([
        { type: 'image', url: `${images.url}/chunked.png` },
        { type: 'image', url: `${images.url}/declared.png` },
      ]),
    ).toEqual([
      { field: 'attachments.0.url', rule: 'attachment.maxBytes' },
      { field: 'attachments.1.url', rule: 'attachment.maxBytes' },
    ]);
    const [exact] = await receiveAttachments(allowed, [{ type: 'image', url: `${images.url}/exact.png` }]);
    expect(exact.bytes.length).toBe(ATTACHMENT_MAX_BYTES);
  });

  it('refuses a private target, and a redirect to one, through the guard unless private networks are allowed', async () => {
    images.serve('/photo.png', { body: PNG });
    images.serve('/to-metadata', { status: 302, headers: { location: 'http://169.254.169.254/latest/photo.png' } });
    const guarded = new GuardedImageDownloader({ allowPrivateNetwork: false });
    expect(await problemsOf([{ type: 'image', url: `${images.url}/photo.png` }], guarded)).toEqual([
      { field: 'attachments.0.url', rule: 'attachment.refused' },
    ]);
    // Loopback let through (as a local callback server would be), the link-local redirect target still refused.
    const loopbackOnly = new GuardedImageDownloader({ allowPrivateNetwork: false, allowedKinds: ['loopback'] });
    expect(await receiveAttachments(loopbackOnly, [{ type: 'image', url: `${images.url}/photo.png` }])).toHaveLength(1);
    expect(await problemsOf([{ type: 'image', url: `${images.url}/to-metadata` }], loopbackOnly)).toEqual([
      { field: 'attachments.0.url', rule: 'attachment.refused' },
    ]);
  });
});

describe('the images a model context reads back', () => {
  const scope = {
    agentId: AGENT,
    environment: 'production' as const,
    sessionId: 'b3c1e6a2-7d4f-4a8b-9c0e-1f2a3b4c5d6e',
  };
  const now = new Date('2026-12-01T12:00:00.000Z');

  it(`are the newest ${MODEL_CONTEXT_MAX_IMAGES} of the conversation, read from the store, sent within the retention`, async () => {
    const blobs = inMemoryBlobStore();
    let id = 0;
    const newId = () => `image-${++id}`;
    const old = await storeAttachments(blobs, scope, [{ mediaType: 'image/gif', bytes: GIF, source: 'data' }], newId);
    const first = await storeAttachments(
      blobs,
      scope,
      [1, 2, 3].map(() => ({ mediaType: 'image/png' as const, bytes: PNG, source: 'data' as const })),
      newId,
    );
    const second = await storeAttachments(
      blobs,
      scope,
      [{ mediaType: 'image/jpeg', bytes: JPEG, source: 'url' }],
      newId,
    );
    expect([...blobs.objects.keys()]).toEqual([1, 2, 3, 4, 5].map((n) => attachmentKey(scope, `image-${n}`)));
    const at = (msAgo: number) => new Date(now.getTime() - msAgo).toISOString();
    const messages: SessionMessage[] = [
      { role: 'user', content: 'too old', attachments: old.attachments, at: at(ATTACHMENT_SHOWN_MS) },
      { role: 'user', content: 'three', attachments: first.attachments, at: at(ATTACHMENT_SHOWN_MS - 60_000) },
      { role: 'assistant', content: 'seen', at: at(1000) },
      { role: 'user', content: 'one more', attachments: second.attachments, at: at(0) },
    ];
    const shown = await loadContextImages(blobs, scope, messages, new Map(), now);
    expect([...shown.keys()].sort()).toEqual(['image-2', 'image-3', 'image-4', 'image-5']);
    expect(shown.get('image-5')).toEqual({ mediaType: 'image/jpeg', data: JPEG });

    // Past the limit the oldest drops out; an object that is gone is left out, not an error.
    await blobs.delete([attachmentKey(scope, 'image-3')]);
    const more = await storeAttachments(
      blobs,
      scope,
      [{ mediaType: 'image/webp', bytes: WEBP, source: 'data' }],
      newId,
    );
    const later = await loadContextImages(
      blobs,
      scope,
      [...messages, { role: 'user', content: 'webp', attachments: more.attachments, at: at(0) }],
      new Map(),
      now,
    );
    expect([...later.keys()].sort()).toEqual(['image-4', 'image-5', 'image-6']);
  });
});
