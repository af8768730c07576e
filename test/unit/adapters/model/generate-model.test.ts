import { BedrockConverseModel } from '#adapters/model/bedrock-converse';
import { OpenAiCompatibleModel } from '#adapters/model/openai-compatible';
import { generateModelFromEnv } from '#composition/model';

it('picks the OpenAI-compatible server, then Bedrock Converse, then the extractive answer', () => {
  expect(generateModelFromEnv({ MODEL_BASE_URL: 'http://127.0.0.1:8080/v1', MODEL_NAME: 'local' })).toBeInstanceOf(
    OpenAiCompatibleModel,
  );
  const bedrock = generateModelFromEnv({ BEDROCK_GENERATE_MODEL_ID: 'amazon.nova-lite-v1:0' });
  expect(bedrock).toBeInstanceOf(BedrockConverseModel);
  expect(bedrock?.name).toBe('bedrock-converse:amazon.nova-lite-v1:0');
  expect(generateModelFromEnv({})).toBeNull();
});
