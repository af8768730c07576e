/**
 * The metadata rules of the spec. Labels (label1, label2): `<namespace>:<value>`, characters `[a-z0-9_-]` plus the
 * one separating colon, at most 50 characters, and no UUID, timestamp or ISO date inside. Custom metadata
 * (customMeta1..4): at most 500 characters.
 *
 * Free of imports on purpose: the web console checks a person's edits with these same functions before it sends them.
 */

export const LABEL_MAX_LENGTH = 50;
export const CUSTOM_META_MAX_LENGTH = 500;

export interface RuleViolation {
  readonly rule: string;
  readonly message: string;
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i;
/** A UUID written without dashes: 32 hex characters mixing digits and letters (so `aaaa…` is no UUID). */
const UUID_COMPACT = /(?<![0-9a-f])(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{32}(?![0-9a-f])/i;
/** Unix time in seconds (10 digits) or milliseconds (13): any run of 10 or more digits. */
const TIMESTAMP = /\d{10,}/;
/** ISO 8601 calendar dates: extended `2024-01-31` (also with `_`), and basic `20240131` when it is a real date. */
const ISO_DATE_EXTENDED = /(?:19|20)\d{2}[-_](?:0[1-9]|1[0-2])[-_](?:0[1-9]|[12]\d|3[01])/;
const ISO_DATE_BASIC = /(?<!\d)(?:19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])(?!\d)/;

/** Every rule the label breaks, in a stable order; empty when the label is valid. */
export function labelViolations(label: string): RuleViolation[] {
  const violations: RuleViolation[] = [];
  const parts = label.split(':');
  if (parts.length !== 2 || parts[0] === '' || parts[1] === '') {
    violations.push({
      rule: 'label.format',
      message: 'must be <namespace>:<value> with exactly one colon and both parts non-empty',
    });
  }
  if (!/^[a-z0-9_:-]*$/.test(label)) {
    violations.push({
      rule: 'label.characters',
      message: /[A-Z]/.test(label)
        ? 'must not contain uppercase letters: use lowercase letters, digits, hyphen and underscore'
        : 'may contain only lowercase letters, digits, hyphen, underscore and the separating colon',
    });
  }
  if (label.length > LABEL_MAX_LENGTH) {
    violations.push({ rule: 'label.maxLength', message: `must be at most ${LABEL_MAX_LENGTH} characters` });
  }
  if (UUID.test(label) || UUID_COMPACT.test(label)) {
    violations.push({ rule: 'label.noUuid', message: 'must not contain a UUID' });
  }
  if (TIMESTAMP.test(label)) {
    violations.push({
      rule: 'label.noTimestamp',
      message: 'must not contain a timestamp (a run of 10 or more digits)',
    });
  }
  if (ISO_DATE_EXTENDED.test(label) || ISO_DATE_BASIC.test(label)) {
    violations.push({ rule: 'label.noIsoDate', message: 'must not contain an ISO date' });
  }
  return violations;
}

/**
 * The custom metadata rule: at most 500 characters, counted as a person counts them (Unicode code points), so 500
 * emoji fit although each is two UTF-16 units in JavaScript. Labels keep their own ASCII rule.
 */
export function customMetaViolations(value: string): RuleViolation[] {
  let characters = 0;
  for (const _ of value) characters += 1;
  if (characters <= CUSTOM_META_MAX_LENGTH) return [];
  return [
    {
      rule: 'maxLength',
      message: `must be at most ${CUSTOM_META_MAX_LENGTH} characters (it has ${characters})`,
    },
  ];
}
