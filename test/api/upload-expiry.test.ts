/** Upload sessions end: the URL stops accepting the PUT and upload-complete answers 410 UPLOAD_EXPIRED. */
import { createDataset, putFile, type UploadLink } from '../helpers/fixtures';
import { pollUntil } from '../helpers/poll';
import { client, startService, type TestService } from '../helpers/service';

let service: TestService;
let call: ReturnType<typeof client>;

beforeAll(async () => {
  service = await startService({ env: { UPLOAD_URL_TTL_SECONDS: '1', UPLOAD_SESSION_TTL_SECONDS: '2' } });
  call = client(service);
});
afterAll(() => service?.stop());

it('expires the upload URL and then the session, and a new upload-link can take the customDocumentId', async () => {
  const dataset = await createDataset(call);
  const link = await call<UploadLink>('POST', '/api/v1/knowledge/documents/upload-link', {
    body: { ...dataset, fileName: 'slow.txt', customDocumentId: 'slow-1' },
  });
  expect(link.body.expiresIn).toBe(1);

  const complete = () =>
    call('POST', '/api/v1/knowledge/documents/upload-complete', { body: { uploadId: link.body.uploadId } });
  const expired = await pollUntil(complete, (r) => r.status === 410);
  expect(expired.status).toBe(410);
  expect(expired.body).toMatchObject({ success: false, error: { code: 'UPLOAD_EXPIRED' } });

  const latePut = await putFile(link.body, 'too late');
  expect(latePut.status).toBe(403);
  expect(await latePut.text()).toMatch(/expired/i);

  // The reservation of the customDocumentId ended with the session.
  const again = await call('POST', '/api/v1/knowledge/documents/upload-link', {
    body: { ...dataset, fileName: 'slow.txt', customDocumentId: 'slow-1' },
  });
  expect(again.status).toBe(200);
});
