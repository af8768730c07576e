/**
 * Bedrock model ids as a deployment lists them (`-c models=…`: README, "Models"): a foundation model, or a
 * cross-Region inference profile (a geography before the model id: `us.`, `eu.`, `apac.`, …) and the Regions it
 * routes to. Shared by the stack (its IAM: lib/constructs/bedrock-models.ts), the functions (GET /dashboard/models)
 * and the stack-check (which action and ARN a Converse call needs).
 */
/**
 * The destination Regions of each geography's system-defined inference profiles, as the Bedrock User Guide lists
 * them (2026-11); a profile routes to the subset its model supports, so granting the whole geography covers it.
 */
export const PROFILE_DESTINATIONS: Readonly<Record<string, readonly string[] | '*'>> = {
  us: ['us-east-1', 'us-east-2', 'us-west-1', 'us-west-2'],
  'us-gov': ['us-gov-east-1', 'us-gov-west-1'],
  ca: ['ca-central-1', 'ca-west-1', 'us-east-1', 'us-east-2', 'us-west-2'],
  eu: ['eu-central-1', 'eu-central-2', 'eu-north-1', 'eu-south-1', 'eu-south-2', 'eu-west-1', 'eu-west-2', 'eu-west-3'],
  apac: [
    'ap-east-2',
    'ap-northeast-1',
    'ap-northeast-2',
    'ap-northeast-3',
    'ap-south-1',
    'ap-south-2',
    'ap-southeast-1',
    'ap-southeast-2',
    'ap-southeast-3',
    'ap-southeast-4',
    'ap-southeast-5',
    'ap-southeast-7',
  ],
  jp: ['ap-northeast-1', 'ap-northeast-3'],
  au: ['ap-southeast-2', 'ap-southeast-4'],
  global: '*',
};

/** A model id as `-c models` takes it: lower-case letters, digits, `.`, `:` and `-` (Bedrock's model id forms). */
export const MODEL_ID = /^[a-z0-9][a-z0-9.:-]{2,99}$/;

export interface BedrockModel {
  readonly id: string;
  readonly kind: 'foundation-model' | 'inference-profile';
  /** The foundation model a profile routes to (the id itself for a foundation model). */
  readonly model: string;
  /** A profile's destination Regions (`*`: every Region); undefined for a foundation model. */
  readonly destinations?: readonly string[] | '*';
}

export function bedrockModel(id: string): BedrockModel {
  if (!MODEL_ID.test(id)) throw new Error(`${JSON.stringify(id)} is not a Bedrock model or inference profile id`);
  const prefix = id.slice(0, id.indexOf('.'));
  const destinations = Object.hasOwn(PROFILE_DESTINATIONS, prefix) ? PROFILE_DESTINATIONS[prefix] : undefined;
  if (destinations === undefined) return { id, kind: 'foundation-model', model: id };
  return { id, kind: 'inference-profile', model: id.slice(prefix.length + 1), destinations };
}
