/** The one Cognito user pools client of this process (AWS_ENDPOINT_URL_COGNITO_IDENTITY_PROVIDER locally: cognito-local). */
import {
  CognitoIdentityProviderClient,
  type CognitoIdentityProviderClientConfig,
} from '@aws-sdk/client-cognito-identity-provider';
import { once } from '#composition/once';
import { captured } from './capture';
import { clientConfig } from './client-config';

/**
 * Signs every call with SigV4, the public ones too (SignUp, ConfirmSignUp, InitiateAuth…), which the SDK sends
 * unsigned: the guard in front of the local engine (lib/local/cognito-guard.ts) takes only the console's calls
 * without a signature. The shape is the SDK's own SigV4 option.
 */
export const signEveryCall: Pick<CognitoIdentityProviderClientConfig, 'httpAuthSchemeProvider'> = {
  httpAuthSchemeProvider: (parameters) => [
    {
      schemeId: 'aws.auth#sigv4',
      signingProperties: { name: 'cognito-idp', region: parameters.region },
      propertiesExtractor: (config, context) => ({ signingProperties: { config, context } }),
    },
  ],
};

export const cognitoClient = once(() => {
  const config = clientConfig('COGNITO_IDENTITY_PROVIDER');
  // A Cognito at an endpoint of its own (the local engine behind its guard, the stack runner's, LocalStack) gets
  // every call signed, SignUp included; in AWS the SDK's defaults stand.
  return captured(new CognitoIdentityProviderClient(config.endpoint ? { ...config, ...signEveryCall } : config));
});
