/** People's accounts of a local runtime under test (COGNITO=on): its cognito-local, as `npm start` printed it. */
import {
  AdminConfirmSignUpCommand,
  type CognitoIdentityProviderClient,
  InitiateAuthCommand,
  RespondToAuthChallengeCommand,
} from '@aws-sdk/client-cognito-identity-provider';
import { cognitoClient, markAddressVerified } from '../../lib/local/cognito';
import type { TestService } from './service';

export interface ServiceCognito {
  readonly endpoint: string;
  readonly userPoolId: string;
  readonly clientId: string;
  readonly client: CognitoIdentityProviderClient;
}

export function cognitoOf(service: TestService): ServiceCognito {
  if (service.people) {
    const { endpoint, userPoolId, clientId, credentials } = service.people.pool;
    return { endpoint, userPoolId, clientId, client: cognitoClient(endpoint, credentials) };
  }
  const printed = /Cognito \(people's sign-in\) at (\S+): user pool (\S+), app client (\S+)/.exec(service.output());
  if (!printed) throw new Error(`the runtime did not print its Cognito endpoint:\n${service.output()}`);
  const [, endpoint, userPoolId, clientId] = printed;
  // Signed with the runtime's engine credentials: its admin calls too pass the guard in front of cognito-local.
  return { endpoint, userPoolId, clientId, client: cognitoClient(endpoint, service.engineCredentials ?? undefined) };
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

/** What the code the pool e-mails proves at a sign-up, done with its admin calls: confirmed, the address verified. */
export async function confirmAddress(cognito: ServiceCognito, email: string): Promise<void> {
  await cognito.client.send(new AdminConfirmSignUpCommand({ UserPoolId: cognito.userPoolId, Username: email }));
  await markAddressVerified(cognito.client, cognito.userPoolId, email);
}

/** A person's sign-in with their password (USER_PASSWORD_AUTH): their ID token. */
export async function signIn(
  cognito: Pick<ServiceCognito, 'client' | 'clientId'>,
  email: string,
  password: string,
): Promise<string> {
  const { AuthenticationResult } = await cognito.client.send(
    new InitiateAuthCommand({
      ClientId: cognito.clientId,
      AuthFlow: 'USER_PASSWORD_AUTH',
      AuthParameters: { USERNAME: email, PASSWORD: password },
    }),
  );
  return AuthenticationResult?.IdToken as string;
}
