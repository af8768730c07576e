/** Field schemas shared by the Knowledge API's requests: the rules of the spec, expressed once. */
import * as z from 'zod';
import { withRules } from '../validation';
import { labelViolations } from './labels';

export const ENVIRONMENTS = ['development', 'staging', 'production'] as const;
export type Environment = (typeof ENVIRONMENTS)[number];

export const CUSTOM_META_MAX_LENGTH = 500;
export const CUSTOM_META_FIELDS = ['customMeta1', 'customMeta2', 'customMeta3', 'customMeta4'] as const;
export type CustomMetaField = (typeof CUSTOM_META_FIELDS)[number];
export const LABEL_FIELDS = ['label1', 'label2'] as const;
export type LabelField = (typeof LABEL_FIELDS)[number];

export const environment = z.enum(ENVIRONMENTS);
export const uuid = z.uuid();

export const label = withRules(z.string(), labelViolations);
export const customMeta = z.string().max(CUSTOM_META_MAX_LENGTH);

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

/** A file name with an extension, no path separators or control characters. */
export const fileName = withRules(z.string().min(1).max(255), (value) => {
  const violations: { rule: string; message: string }[] = [];
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what is refused here
  if (/[/\\\u0000-\u001f\u007f]/.test(value) || value === '.' || value === '..') {
    violations.push({ rule: 'fileName.characters', message: 'must not contain "/", "\\" or control characters' });
  }
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
