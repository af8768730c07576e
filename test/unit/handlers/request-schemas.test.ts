/** The request schemas give one detail per broken field, naming the field and the rule. */
import { ValidationError } from '#core/errors';
import { parseInput } from '#core/validation';
import { patchMetadataSchema, updateUploadLinkSchema, uploadLinkSchema } from '#handlers/http/knowledge/schemas';
import { buildOpenApiDocument } from '#handlers/http/openapi-document';

const valid = {
  agentId: '0b5a1a9e-8c1f-4f0e-9a59-3f1d2c9a7b10',
  environment: 'production',
  knowledgeBaseId: '7d0f3c2e-5b4a-4e8f-8a1d-2c3b4a5d6e7f',
  fileName: 'guide.pdf',
};

function details(schema: Parameters<typeof parseInput>[0], input: unknown) {
  try {
    parseInput(schema, input);
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return (error as ValidationError).details.map(({ field, rule }) => ({ field, rule }));
  }
  throw new Error('expected a validation error');
}

describe('upload-link request', () => {
  it('accepts a minimal valid request and null labels', () => {
    expect(parseInput(uploadLinkSchema, { ...valid, label1: null })).toMatchObject(valid);
  });

  it('names every missing required field', () => {
    expect(details(uploadLinkSchema, {})).toEqual([
      { field: 'agentId', rule: 'required' },
      { field: 'environment', rule: 'required' },
      { field: 'knowledgeBaseId', rule: 'required' },
      { field: 'fileName', rule: 'required' },
    ]);
  });

  it('reports a 501-character custom metadata value and accepts 500', () => {
    expect(details(uploadLinkSchema, { ...valid, customMeta3: 'x'.repeat(501) })).toEqual([
      { field: 'customMeta3', rule: 'maxLength' },
    ]);
    expect(parseInput(uploadLinkSchema, { ...valid, customMeta3: 'x'.repeat(500) }).customMeta3).toHaveLength(500);
  });

  it('counts custom metadata in characters (code points), so 500 emoji fit and 501 do not', () => {
    const emoji500 = '😀'.repeat(500); // 1,000 UTF-16 units
    expect(parseInput(uploadLinkSchema, { ...valid, customMeta1: emoji500 }).customMeta1).toBe(emoji500);
    const { fileName: _, ...dataset } = valid;
    const patch = { ...dataset, customDocumentId: 'doc-1', customMeta4: emoji500 };
    expect(parseInput(patchMetadataSchema, patch)).toMatchObject({ customMeta4: emoji500 });
    expect(parseInput(updateUploadLinkSchema, { ...patch, fileName: 'new.pdf' })).toMatchObject(patch);
    expect(details(uploadLinkSchema, { ...valid, customMeta2: `${emoji500}😀` })).toEqual([
      { field: 'customMeta2', rule: 'maxLength' },
    ]);
    // a combining accent is a character of its own: "e" + U+0301 counts two
    expect(details(uploadLinkSchema, { ...valid, customMeta2: 'e\u0301'.repeat(251) })).toEqual([
      { field: 'customMeta2', rule: 'maxLength' },
    ]);
  });

  it('states the same limit in the OpenAPI document (JSON Schema maxLength counts code points too)', () => {
    const operation = buildOpenApiDocument().paths['/api/v1/knowledge/documents/upload-link'].post;
    const customMeta1 = { anyOf: expect.arrayContaining([{ type: 'string', maxLength: 500 }]) };
    expect(operation).toMatchObject({
      requestBody: { content: { 'application/json': { schema: { properties: { customMeta1 } } } } },
    });
  });

  it('keeps the ASCII label rule: an emoji in a label is refused', () => {
    expect(details(uploadLinkSchema, { ...valid, label1: 'topic:😀' })).toEqual([
      { field: 'label1', rule: 'label.characters' },
    ]);
  });

  it('reports an unknown field by name', () => {
    expect(details(uploadLinkSchema, { ...valid, lable1: 'a:b' })).toEqual([{ field: 'lable1', rule: 'unknownField' }]);
  });
});

describe('document identifier', () => {
  const base = { ...valid };
  it('requires exactly one of s3Key and customDocumentId', () => {
    expect(details(updateUploadLinkSchema, base)).toEqual([
      { field: 's3Key', rule: 'exactlyOneOf' },
      { field: 'customDocumentId', rule: 'exactlyOneOf' },
    ]);
    expect(details(updateUploadLinkSchema, { ...base, s3Key: 'a/b', customDocumentId: 'doc-1' })).toEqual([
      { field: 's3Key', rule: 'exactlyOneOf' },
      { field: 'customDocumentId', rule: 'exactlyOneOf' },
    ]);
  });

  it('lets PATCH clear a label with null', () => {
    const { fileName: _f, ...rest } = base;
    expect(parseInput(patchMetadataSchema, { ...rest, customDocumentId: 'doc-1', label1: null }).label1).toBeNull();
  });
});
