/**
 * The one DynamoDB document client of this process. Its endpoint comes from the standard variable
 * AWS_ENDPOINT_URL_DYNAMODB of the handlers' environment, which is how the local runtime points it at its engine.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { once } from '#composition/once';
import { captured } from './capture';
import { clientConfig } from './client-config';

export const dynamoDocumentClient = once(() =>
  DynamoDBDocumentClient.from(captured(new DynamoDBClient(clientConfig('DYNAMODB'))), {
    marshallOptions: { removeUndefinedValues: true, convertEmptyValues: false },
  }),
);
