/**
 * The IAM authorization of the Bedrock requests the stand-in serves (bedrock-stand-in.ts): the action and resource
 * each operation needs, as the Service Authorization Reference lists them for Amazon Bedrock
 * (https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonbedrock.html).
 */
import { bedrockModel, MODEL_ID } from '#shared/bedrock-models';
import type { BedrockCall } from './bedrock-stand-in';

export interface IamCall {
  readonly action: string;
  readonly resource: string;
}

/**
 * What one Bedrock request needs of the caller's role. Knowledge base operations (the document APIs and Retrieve)
 * each have an action of their own on the knowledge base's ARN. Converse is authorized as `bedrock:InvokeModel`
 * (the Converse API reference: "This operation requires permission for the bedrock:InvokeModel action") on the model's
 * ARN: a foundation model (`arn:aws:bedrock:<region>::foundation-model/<id>`, no account) or an inference profile
 * of the account (the foundation models a profile routes to are checked by Bedrock in each region it routes to; a
 * single-region stand-in cannot, and does not, check those).
 */
export function bedrockIamCalls(call: BedrockCall, region: string, account: string): IamCall[] {
  const input = call.input;
  switch (call.operation) {
    case 'IngestKnowledgeBaseDocuments':
    case 'DeleteKnowledgeBaseDocuments':
    case 'GetKnowledgeBaseDocuments':
    case 'ListKnowledgeBaseDocuments':
    case 'Retrieve':
      return [
        {
          action: `bedrock:${call.operation}`,
          resource: `arn:aws:bedrock:${region}:${account}:knowledge-base/${String(input.knowledgeBaseId)}`,
        },
      ];
    case 'Converse': {
      const modelId = String(input.modelId);
      const resource = modelId.startsWith('arn:')
        ? modelId
        : MODEL_ID.test(modelId) && bedrockModel(modelId).kind === 'inference-profile'
          ? `arn:aws:bedrock:${region}:${account}:inference-profile/${modelId}`
          : `arn:aws:bedrock:${region}::foundation-model/${modelId}`;
      return [{ action: 'bedrock:InvokeModel', resource }];
    }
  }
}
