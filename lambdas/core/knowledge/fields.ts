/** Field schemas shared by the Knowledge API's requests: the rules of the spec, expressed once. */
import * as z from 'zod';
import { withRules } from '#core/validation';
import { CUSTOM_META_MAX_LENGTH, customMetaViolations, labelViolations } from './labels';

export { CUSTOM_META_MAX_LENGTH, customMetaViolations };

export const ENVIRONMENTS = ['development', 'staging', 'production'] as const;
export type Environment = (typeof ENVIRONMENTS)[number];

export const CUSTOM_META_FIELDS = ['customMeta1', 'customMeta2', 'customMeta3', 'customMeta4'] as const;
export type CustomMetaField = (typeof CUSTOM_META_FIELDS)[number];
export const LABEL_FIELDS = ['label1', 'label2'] as const;
export type LabelField = (typeof LABEL_FIELDS)[number];

export const environment = z.enum(ENVIRONMENTS);
export const uuid = z.uuid();

export const label = withRules(z.string(), labelViolations);

// JSON Schema's maxLength counts code points too, so the OpenAPI document states the same limit.
export const customMeta = withRules(z.string(), customMetaViolations).meta({ maxLength: CUSTOM_META_MAX_LENGTH });

/** Caller's external id. It becomes part of the document's s3Key, so no `/` and a bounded length. */
export const customDocumentId = withRules(z.string(), (value) =>
  /^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$/.test(value)
    ? []
    : [
        {
          rule: 'customDocumentId.format',
          message:
            'must be 1 to 128 characters of letters, digits, ".", "_", ":", "@" and "-", starting with a letter or digit',
        },
      ],
);

/**
 * Most UTF-8 bytes of a file name. The name is the last segment of the document's object key: with the longest
 * prefix (`<agent>/<environment>/<kb>/<128-character id>/_versions/<upload>/`, 262 bytes) a key stays under 470
 * bytes, far from S3's 1,024, and the segment stays under the 255 bytes a file system allows with room for the
 * suffixes a local store adds.
 */
export const FILE_NAME_MAX_BYTES = 200;

/** Bidirectional embedding, override and isolate controls: they make `uni\u202Egnp.txt` display as `unitxt.png`. */
const BIDI_CONTROLS = /[\u202a-\u202e\u2066-\u2069]/;
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what is refused here
const SEPARATORS_AND_CONTROLS = /[/\\\u0000-\u001f\u007f-\u009f]/;

/**
 * What makes a name unsafe to store and show, whatever its extension: length in UTF-8 bytes, path separators,
 * control characters, bidirectional controls, and the names `.` and `..`. Every ZIP entry's name is held to this too.
 */
export function fileNameSafetyViolations(value: string): { rule: string; message: string }[] {
  const violations: { rule: string; message: string }[] = [];
  const bytes = Buffer.byteLength(value, 'utf8');
  if (bytes > FILE_NAME_MAX_BYTES) {
    violations.push({
      rule: 'fileName.maxBytes',
      message: `must be at most ${FILE_NAME_MAX_BYTES} bytes in UTF-8 (it is ${bytes})`,
    });
  }
  if (SEPARATORS_AND_CONTROLS.test(value)) {
    violations.push({ rule: 'fileName.characters', message: 'must not contain "/", "\\" or control characters' });
  }
  if (BIDI_CONTROLS.test(value)) {
    violations.push({
      rule: 'fileName.bidiControl',
      message: 'must not contain bidirectional control characters (U+202A to U+202E, U+2066 to U+2069)',
    });
  }
  if (value === '.' || value === '..') {
    violations.push({ rule: 'fileName.dotName', message: 'must not be "." or ".."' });
  }
  return violations;
}

/** A file name with an extension, held to the safety rules above. */
export const fileName = withRules(z.string().min(1), (value) => {
  const violations = fileNameSafetyViolations(value);
  if (!/\.[A-Za-z0-9]{1,10}$/.test(value) || /^\.[^.]*$/.test(value)) {
    violations.push({ rule: 'fileName.extension', message: 'must have a file extension such as .pdf or .txt' });
  }
  return violations;
});

/** The dataset a request addresses: agent, environment, knowledge base. */
export const datasetFields = {
  agentId: uuid,
  environment,
  knowledgeBaseId: uuid,
};

/** Exactly one of s3Key and customDocumentId identifies an existing document. */
export const documentIdentifierFields = {
  s3Key: z.string().min(1).max(1024).optional(),
  customDocumentId: customDocumentId.optional(),
};

export function exactlyOneIdentifier(
  value: { s3Key?: string; customDocumentId?: string },
  ctx: z.core.$RefinementCtx,
): void {
  const given = [value.s3Key, value.customDocumentId].filter((v) => v !== undefined).length;
  if (given === 1) return;
  const message =
    given === 0 ? 'exactly one of s3Key and customDocumentId is required' : 'give s3Key or customDocumentId, not both';
  for (const field of ['s3Key', 'customDocumentId']) {
    ctx.addIssue({ code: 'custom', path: [field], message, params: { rule: 'exactlyOneOf' } });
  }
}

/** In requests: a label, or null for "no label" (clears it on update). */
export const labelValue = label.nullable().optional();
/** In requests: custom metadata, or null for "no value" (clears it on update). */
export const customMetaValue = customMeta.nullable().optional();

export const labelAndMetaFields = {
  label1: labelValue,
  label2: labelValue,
  customMeta1: customMetaValue,
  customMeta2: customMetaValue,
  customMeta3: customMetaValue,
  customMeta4: customMetaValue,
};

export type MetadataField = LabelField | CustomMetaField;
export const METADATA_FIELDS: readonly MetadataField[] = [...LABEL_FIELDS, ...CUSTOM_META_FIELDS];
/** Changes to labels and custom metadata: a value sets, null clears, absent keeps. */
export type MetadataChanges = Partial<Record<MetadataField, string | null>>;

export function pickMetadataChanges(input: Partial<Record<MetadataField, string | null | undefined>>): MetadataChanges {
  const changes: MetadataChanges = {};
  for (const field of METADATA_FIELDS) {
    const value = input[field];
    if (value !== undefined) changes[field] = value;
  }
  return changes;
}
