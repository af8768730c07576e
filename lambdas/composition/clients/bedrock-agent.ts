/**
 * The Bedrock Agent clients of this process: the agent API (ingest and delete knowledge base documents) and the
 * agent runtime (Retrieve, RetrieveAndGenerate), for the Bedrock knowledge index. Both retry adaptively
 * (bedrock-retry.ts).
 */
import { BedrockAgentClient } from '@aws-sdk/client-bedrock-agent';
import { BedrockAgentRuntimeClient } from '@aws-sdk/client-bedrock-agent-runtime';
import { once } from '#composition/once';
import { BEDROCK_AGENT_RETRY, BEDROCK_AGENT_RUNTIME_RETRY } from './bedrock-retry';
import { captured } from './capture';
import { clientConfig } from './client-config';

export const bedrockAgentClient = once(() =>
  captured(new BedrockAgentClient({ ...clientConfig('BEDROCK_AGENT'), ...BEDROCK_AGENT_RETRY })),
);

export const bedrockAgentRuntimeClient = once(() =>
  captured(new BedrockAgentRuntimeClient({ ...clientConfig('BEDROCK_AGENT_RUNTIME'), ...BEDROCK_AGENT_RUNTIME_RETRY })),
);
