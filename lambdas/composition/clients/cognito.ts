/** The one Cognito user pools client of this process (AWS_ENDPOINT_URL_COGNITO_IDENTITY_PROVIDER locally: cognito-local). */
import { CognitoIdentityProviderClient } from '@aws-sdk/client-cognito-identity-provider';
import { once } from '#composition/once';
import { captured } from './capture';
import { clientConfig } from './client-config';

export const cognitoClient = once(() =>
  captured(new CognitoIdentityProviderClient(clientConfig('COGNITO_IDENTITY_PROVIDER'))),
);
