/** File names are held to bytes, not characters, and to what displays honestly (issue 22, "Names"). */
import { ValidationError } from '#core/errors';
import { FILE_NAME_MAX_BYTES } from '#core/knowledge/fields';
import { parseInput } from '#core/validation';
import { updateUploadLinkSchema, uploadLinkSchema } from '#handlers/http/knowledge/schemas';

const dataset = {
  agentId: '0b5a1a9e-8c1f-4f0e-9a59-3f1d2c9a7b10',
  environment: 'production',
  knowledgeBaseId: '7d0f3c2e-5b4a-4e8f-8a1d-2c3b4a5d6e7f',
};

function rulesOf(fileName: string, schema: typeof uploadLinkSchema | typeof updateUploadLinkSchema = uploadLinkSchema) {
  const input = schema === uploadLinkSchema ? { ...dataset, fileName } : { ...dataset, fileName, s3Key: 'k' };
  try {
    parseInput(schema, input);
    return [];
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return (error as ValidationError).details.filter((d) => d.field === 'fileName').map((d) => d.rule);
  }
}

describe('fileName', () => {
  it('counts UTF-8 bytes: 125 × "é" + ".txt" is 129 characters but 254 bytes, and is refused', () => {
    const name = `${'é'.repeat(125)}.txt`;
    expect(name).toHaveLength(129);
    expect(rulesOf(name)).toEqual(['fileName.maxBytes']);
  });

  it(`accepts exactly ${FILE_NAME_MAX_BYTES} bytes and refuses one more`, () => {
    expect(rulesOf(`${'a'.repeat(FILE_NAME_MAX_BYTES - 4)}.txt`)).toEqual([]);
    expect(rulesOf(`${'a'.repeat(FILE_NAME_MAX_BYTES - 3)}.txt`)).toEqual(['fileName.maxBytes']);
    // Multi-byte characters count by their bytes: 98 × "é" (196 bytes) + ".txt" is 200.
    expect(rulesOf(`${'é'.repeat(98)}.txt`)).toEqual([]);
    expect(rulesOf(`${'é'.repeat(98)}a.txt`)).toEqual(['fileName.maxBytes']);
  });

  it('refuses a 245-character ASCII name (it crashed the local S3 engine with ENAMETOOLONG)', () => {
    expect(rulesOf(`${'a'.repeat(241)}.txt`)).toEqual(['fileName.maxBytes']);
  });

  it.each([
    ['U+202E right-to-left override', 'uni\u202Egnp.txt'],
    ['U+202A left-to-right embedding', 'a\u202Ab.txt'],
    ['U+2066 left-to-right isolate', 'a\u2066b.txt'],
    ['U+2069 pop directional isolate', 'a\u2069b.txt'],
  ])('refuses a bidirectional control (%s)', (_, name) => {
    expect(rulesOf(name)).toEqual(['fileName.bidiControl']);
  });

  it('refuses C1 control characters as it refuses C0 ones', () => {
    expect(rulesOf('a\u0085b.txt')).toEqual(['fileName.characters']);
    expect(rulesOf('a\u0007b.txt')).toEqual(['fileName.characters']);
  });

  it('refuses "." and ".." by name', () => {
    expect(rulesOf('.')).toContain('fileName.dotName');
    expect(rulesOf('..')).toContain('fileName.dotName');
  });

  it('holds the update endpoint to the same rules', () => {
    expect(rulesOf('uni\u202Egnp.txt', updateUploadLinkSchema)).toEqual(['fileName.bidiControl']);
    expect(rulesOf(`${'é'.repeat(125)}.txt`, updateUploadLinkSchema)).toEqual(['fileName.maxBytes']);
  });

  it('still accepts ordinary names in any script', () => {
    for (const name of ['guide.pdf', 'Résumé 2024 (final).docx', '報告書.txt', 'تقرير.md', 'a.b.c.json']) {
      expect(rulesOf(name)).toEqual([]);
    }
  });
});
