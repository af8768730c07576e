/**
 * The models a deployment may call (README, "Models"): what GET /dashboard/models lists from the environment, and a
 * definition naming a Bedrock model outside BEDROCK_MODELS refused when it is stored, not when it runs.
 */
import { modelCatalogFromEnv } from '#composition/model-catalog';
import { checkDefinition } from '#core/flows/definitions';
import { bedrockModel } from '../../../../lib/constructs/bedrock-models';
import { helloFlow } from '../../../helpers/flow-definitions';

const flowWith = helloFlow;
const bedrock = (model?: string) => ({ name: 'ChatBedrockConverse', ...(model ? { properties: { model } } : {}) });

describe('a definition against the deployment’s Bedrock models', () => {
  const models = ['amazon.nova-lite-v1:0', 'us.anthropic.claude-3-5-haiku-20241022-v1:0'];

  it('accepts a listed model, a profile, the default, and any other class', () => {
    for (const definition of [
      flowWith(bedrock('amazon.nova-lite-v1:0')),
      flowWith(bedrock('us.anthropic.claude-3-5-haiku-20241022-v1:0')),
      flowWith(bedrock()),
      flowWith(),
      flowWith({ name: 'ChatOffline' }),
    ]) {
      expect(checkDefinition(definition, models).problems).toEqual([]);
    }
  });

  it('refuses a model outside the list, naming the node, the field and the models there are', () => {
    expect(checkDefinition(flowWith(bedrock('anthropic.claude-3-opus-20240229-v1:0')), models).problems).toEqual([
      {
        field: 'flows.0.nodes.1.llmConfig.properties.model',
        rule: 'llmConfig.modelUnavailable',
        flow: 'main',
        node: 'Answer',
        message: `model anthropic.claude-3-opus-20240229-v1:0 is not one this deployment may call (GET /dashboard/models): ${models.join(', ')}`,
      },
    ]);
  });

  it('refuses ChatBedrockConverse where the deployment calls no Bedrock model; not checked where unknown (local)', () => {
    expect(checkDefinition(flowWith(bedrock()), []).problems).toMatchObject([
      { field: 'flows.0.nodes.1.llmConfig.name', rule: 'llmConfig.modelUnavailable' },
    ]);
    expect(checkDefinition(flowWith(bedrock('anything.at-all:0')), undefined).problems).toEqual([]);
  });
});

describe('a browser task’s model against the deployment’s models', () => {
  const models = ['amazon.nova-lite-v1:0'];
  const browsing = (model?: string) => ({
    flows: [
      {
        name: 'web',
        nodes: [
          { name: 'Start', type: 'trigger', triggerType: 'webhook' },
          { name: 'Browse', type: 'browserTask', prompt: 'Read https://example.com', ...(model ? { model } : {}) },
        ],
        edges: [{ from: 'Start', to: 'Browse', type: 'stepForward' }],
      },
    ],
  });

  it('takes the default, a class name, or a listed model of the default class (Bedrock)', () => {
    for (const model of [undefined, 'ChatOffline', 'ChatBedrockConverse', 'amazon.nova-lite-v1:0']) {
      expect([model, checkDefinition(browsing(model), models).problems]).toEqual([model, []]);
    }
  });

  it('refuses a model the default class cannot call: outside the list, or any where the default is offline', () => {
    expect(checkDefinition(browsing('anthropic.claude-3-opus-20240229-v1:0'), models).problems).toEqual([
      {
        field: 'flows.0.nodes.1.model',
        rule: 'llmConfig.modelUnavailable',
        flow: 'web',
        node: 'Browse',
        message:
          'model anthropic.claude-3-opus-20240229-v1:0 is not one this deployment may call (GET /dashboard/models): amazon.nova-lite-v1:0',
      },
    ]);
    expect(checkDefinition(browsing('amazon.nova-lite-v1:0'), []).problems).toMatchObject([
      { field: 'flows.0.nodes.1.model', message: expect.stringContaining('calls no language model') },
    ]);
    expect(checkDefinition(browsing('ChatBedrockConverse'), []).problems).toHaveLength(1);
  });

  it('leaves a model name to an OpenAI-compatible default: the server knows its names, the list does not', () => {
    expect(checkDefinition(browsing('gpt-4.1-mini'), models, 'ChatOpenAICompatible').problems).toEqual([]);
  });
});

describe('GET /dashboard/models from the environment', () => {
  it('lists the Bedrock models, the first the default, and the offline model, which is not a language model', () => {
    const catalog = modelCatalogFromEnv({ BEDROCK_MODELS: 'amazon.nova-lite-v1:0,eu.amazon.nova-pro-v1:0' });
    expect(catalog.map((m) => [m.id, m.provider, m.llmConfigName, m.kind, m.default, m.languageModel])).toEqual([
      ['amazon.nova-lite-v1:0', 'bedrock', 'ChatBedrockConverse', 'foundation-model', true, true],
      ['eu.amazon.nova-pro-v1:0', 'bedrock', 'ChatBedrockConverse', 'inference-profile', false, true],
      ['offline', 'offline', 'ChatOffline', undefined, false, false],
    ]);
  });

  it('puts the OpenAI-compatible server first when it is configured (it is the default), and offline alone without any', () => {
    const catalog = modelCatalogFromEnv({
      MODEL_BASE_URL: 'http://127.0.0.1:11434/v1',
      MODEL_NAME: 'llama3.1',
      MODEL_IMAGE_INPUT: 'false',
    });
    expect(catalog.map((m) => [m.id, m.default, m.imageInput])).toEqual([
      ['llama3.1', true, false],
      ['offline', false, false],
    ]);
    expect(modelCatalogFromEnv({}).map((m) => [m.id, m.default])).toEqual([['offline', true]]);
  });
});

describe('model ids as -c models takes them', () => {
  it('tells a foundation model from an inference profile, and a geography’s destinations', () => {
    expect(bedrockModel('amazon.nova-lite-v1:0')).toEqual({
      id: 'amazon.nova-lite-v1:0',
      kind: 'foundation-model',
      model: 'amazon.nova-lite-v1:0',
    });
    expect(bedrockModel('us.amazon.nova-lite-v1:0')).toMatchObject({
      kind: 'inference-profile',
      model: 'amazon.nova-lite-v1:0',
      destinations: ['us-east-1', 'us-east-2', 'us-west-1', 'us-west-2'],
    });
    expect(bedrockModel('global.anthropic.claude-sonnet-4-5-20250929-v1:0')).toMatchObject({ destinations: '*' });
    expect(() => bedrockModel('Nova Lite')).toThrow(/not a Bedrock model/);
  });
});
