/** The one Bedrock runtime client of this process (Converse for generate and the flow models). */
import { BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';
import { once } from '../once';

export const bedrockRuntimeClient = once(() => new BedrockRuntimeClient({}));
