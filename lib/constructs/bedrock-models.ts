/**
 * The Bedrock models a deployment may call (`-c models=…`: README, "Models"), and the IAM resources each needs.
 * A foundation model is invoked by its id in the stack's region: `arn:aws:bedrock:<region>::foundation-model/<id>`.
 * A cross-Region inference profile (`us.`, `eu.`, `apac.`, … before the model id) is invoked by the profile's ARN
 * in the stack's account and region, and Bedrock then checks the caller may invoke the foundation model in the
 * destination Region it routes to, so the role needs that model in every destination Region of the geography
 * (Bedrock User Guide, "Supported Regions and models for inference profiles" and "Prerequisites for inference
 * profiles"). A global profile routes to any commercial Region: its model is granted in every Region (`*`).
 */
import { type Stack, Token } from 'aws-cdk-lib';

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

/** The ARNs `bedrock:InvokeModel` must allow for `id`, in the form Bedrock checks them. */
export function modelArns(stack: Stack, id: string): string[] {
  const model = bedrockModel(id);
  const foundation = (region: string) => `arn:${stack.partition}:bedrock:${region}::foundation-model/${model.model}`;
  if (model.kind === 'foundation-model') return [foundation(stack.region)];
  const profile = `arn:${stack.partition}:bedrock:${stack.region}:${stack.account}:inference-profile/${id}`;
  const destinations = model.destinations === '*' ? ['*'] : [...(model.destinations ?? [])];
  // In an environment-agnostic stack the region is a token: the stack's own region is among the destinations anyway.
  if (!Token.isUnresolved(stack.region) && destinations[0] !== '*' && !destinations.includes(stack.region)) {
    throw new Error(
      `inference profile ${id} cannot be called from ${stack.region}: it routes within ${destinations.join(', ')}`,
    );
  }
  return [profile, ...destinations.map(foundation)];
}
