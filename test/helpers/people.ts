/** People's accounts of a local runtime under test (COGNITO=on): its cognito-local, as `npm start` printed it. */
import {
  type CognitoIdentityProviderClient,
  InitiateAuthCommand,
  RespondToAuthChallengeCommand,
} from '@aws-sdk/client-cognito-identity-provider';
import { cognitoClient } from '../../lib/local/cognito';
import type { TestService } from './service';

export interface ServiceCognito {
  readonly endpoint: string;
  readonly userPoolId: string;
  readonly clientId: string;
  readonly client: CognitoIdentityProviderClient;
}

export function cognitoOf(service: TestService): ServiceCognito {
  const printed = /Cognito \(people's sign-in\) at (\S+): user pool (\S+), app client (\S+)/.exec(service.output());
  if (!printed) throw new Error(`the runtime did not print its Cognito endpoint:\n${service.output()}`);
  const [, endpoint, userPoolId, clientId] = printed;
  return { endpoint, userPoolId, clientId, client: cognitoClient(endpoint) };
}

/** An invited person's first sign-in: the temporary password, then the one they choose; their ID token. */
export async function firstSignIn(
  cognito: ServiceCognito,
  email: string,
  temporaryPassword: string,
  chosenPassword: string,
): Promise<string> {
  const first = await cognito.client.send(
    new InitiateAuthCommand({
      ClientId: cognito.clientId,
      AuthFlow: 'USER_PASSWORD_AUTH',
      AuthParameters: { USERNAME: email, PASSWORD: temporaryPassword },
    }),
  );
  if (first.ChallengeName !== 'NEW_PASSWORD_REQUIRED') {
    throw new Error(`expected the NEW_PASSWORD_REQUIRED challenge, got ${first.ChallengeName}`);
  }
  const chosen = await cognito.client.send(
    new RespondToAuthChallengeCommand({
      ClientId: cognito.clientId,
      ChallengeName: 'NEW_PASSWORD_REQUIRED',
      Session: first.Session,
      ChallengeResponses: { USERNAME: email, NEW_PASSWORD: chosenPassword },
    }),
  );
  return chosen.AuthenticationResult?.IdToken as string;
}
