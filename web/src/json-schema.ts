/** The part of JSON Schema (draft 2020-12, as zod's z.toJSONSchema writes it) the properties panel reads. */
export interface JsonSchema {
  readonly type?: string | readonly string[];
  readonly description?: string;
  readonly properties?: Readonly<Record<string, JsonSchema>>;
  readonly required?: readonly string[];
  readonly additionalProperties?: boolean | JsonSchema;
  readonly items?: JsonSchema;
  readonly enum?: readonly (string | number | boolean)[];
  readonly const?: string | number | boolean;
  readonly default?: unknown;
  readonly anyOf?: readonly JsonSchema[];
  readonly oneOf?: readonly JsonSchema[];
  readonly minimum?: number;
  readonly maximum?: number;
  readonly minLength?: number;
  readonly maxLength?: number;
  readonly minItems?: number;
  readonly maxItems?: number;
  readonly pattern?: string;
  /** This service's own keyword (lambdas/core/flows/definition.ts): the field applies only where `field` is `value`. */
  readonly 'x-only-when'?: Readonly<Record<string, string>>;
  readonly [keyword: string]: unknown;
}
