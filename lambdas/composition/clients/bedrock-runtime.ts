/** The one Bedrock runtime client of this process (Converse for generate and the flow models), retrying adaptively. */
import { BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';
import { once } from '#composition/once';
import { BEDROCK_RUNTIME_RETRY } from './bedrock-retry';
import { captured } from './capture';
import { clientConfig } from './client-config';

export const bedrockRuntimeClient = once(() =>
  captured(new BedrockRuntimeClient({ ...clientConfig('BEDROCK_RUNTIME'), ...BEDROCK_RUNTIME_RETRY })),
);
