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
import { bedrockModel } from '#shared/bedrock-models';

export { bedrockModel, MODEL_ID, PROFILE_DESTINATIONS } from '#shared/bedrock-models';

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
