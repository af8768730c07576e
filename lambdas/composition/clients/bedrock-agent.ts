/**
 * The Bedrock Agent clients of this process: the agent API (ingest and delete knowledge base documents) and the
 * agent runtime (Retrieve, RetrieveAndGenerate), for the Bedrock knowledge index.
 */
import { BedrockAgentClient } from '@aws-sdk/client-bedrock-agent';
import { BedrockAgentRuntimeClient } from '@aws-sdk/client-bedrock-agent-runtime';
import { once } from '#composition/once';
import { captured } from './capture';
import { clientConfig } from './client-config';

export const bedrockAgentClient = once(() => captured(new BedrockAgentClient(clientConfig('BEDROCK_AGENT'))));

export const bedrockAgentRuntimeClient = once(() =>
  captured(new BedrockAgentRuntimeClient(clientConfig('BEDROCK_AGENT_RUNTIME'))),
);
