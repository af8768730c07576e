/** The one Bedrock runtime client of this process (Converse for generate and the flow models). */
import { BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';
import { once } from '#composition/once';
import { captured } from './capture';
import { clientConfig } from './client-config';

export const bedrockRuntimeClient = once(() => captured(new BedrockRuntimeClient(clientConfig('BEDROCK_RUNTIME'))));
