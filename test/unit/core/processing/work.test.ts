import { documentOfObjectKey, parseWork } from '#core/processing/work';

function s3Event(eventName: string, key: string) {
  return JSON.stringify({ Records: [{ eventName, s3: { object: { key } } }] });
}

describe('parseWork', () => {
  it.each([
    'process-document',
    'confirm-indexed',
    'sync-metadata',
    'delete-document',
    'process-zip',
    'delete-knowledge-base',
  ])('reads a %s message as a message, unchanged', (kind) => {
    const message = { kind, agentId: 'a', environment: 'development', knowledgeBaseId: 'kb', documentId: 'd' };

    expect(parseWork(JSON.stringify(message))).toEqual([{ kind: 'message', message }]);
  });

  it("reads an S3 object-created event for a document's object, decoding the key", () => {
    expect(parseWork(s3Event('ObjectCreated:Put', 'agent-1/staging/kb-1/doc-1/my+report%C3%A9.txt'))).toEqual([
      {
        kind: 's3-object',
        objectKey: 'agent-1/staging/kb-1/doc-1/my reporté.txt',
        agentId: 'agent-1',
        environment: 'staging',
        knowledgeBaseId: 'kb-1',
        documentId: 'doc-1',
      },
    ]);
  });

  it('reads a version object of a document as that document', () => {
    expect(parseWork(s3Event('ObjectCreated:Put', 'a/production/kb/doc/_versions/up-1/v2.txt'))).toMatchObject([
      { kind: 's3-object', documentId: 'doc', environment: 'production' },
    ]);
  });

  it('ignores, with a reason, what is no document: ZIP imports, unknown environments, deletions, test events', () => {
    const body = JSON.stringify({
      Records: [
        { eventName: 'ObjectCreated:Put', s3: { object: { key: 'a/development/kb/_imports/z/batch.zip' } } },
        { eventName: 'ObjectCreated:Put', s3: { object: { key: 'a/qa/kb/doc/file.txt' } } },
        { eventName: 'ObjectRemoved:Delete', s3: { object: { key: 'a/development/kb/doc/file.txt' } } },
      ],
    });

    expect(parseWork(body)).toEqual([
      { kind: 'ignore', reason: 'object a/development/kb/_imports/z/batch.zip is no document' },
      { kind: 'ignore', reason: 'object a/qa/kb/doc/file.txt is no document' },
      { kind: 'ignore', reason: 'S3 event ObjectRemoved:Delete' },
    ]);
    expect(parseWork(JSON.stringify({ Event: 's3:TestEvent' }))).toEqual([{ kind: 'ignore', reason: 'S3 test event' }]);
  });

  it('ignores a body that is not JSON or of an unknown shape, never throwing', () => {
    expect(parseWork('{not json')).toEqual([{ kind: 'ignore', reason: 'message body is not JSON' }]);
    expect(parseWork(JSON.stringify({ kind: 'drop-table' }))).toEqual([
      { kind: 'ignore', reason: 'unknown message shape' },
    ]);
    expect(parseWork('null')).toEqual([{ kind: 'ignore', reason: 'unknown message shape' }]);
  });
});

describe('documentOfObjectKey', () => {
  it('accepts the identity path and version paths only', () => {
    expect(documentOfObjectKey('a/development/kb/doc/f.txt')).toEqual({
      agentId: 'a',
      environment: 'development',
      knowledgeBaseId: 'kb',
      documentId: 'doc',
    });
    expect(documentOfObjectKey('a/development/kb/doc/other/up/f.txt')).toBeUndefined();
    expect(documentOfObjectKey('a/development/kb/f.txt')).toBeUndefined();
  });
});
