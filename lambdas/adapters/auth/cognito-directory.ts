/**
 * PeopleDirectory on an Amazon Cognito user pool whose user names are e-mails (the stack's, or cognito-local's:
 * lib/local/cognito.ts). Sign-up is the pool's public SignUp through the platform's app client; invitations and
 * removals are the administrator calls the function's role is granted.
 */

import { randomBytes } from 'node:crypto';
import {
  AdminConfirmSignUpCommand,
  AdminCreateUserCommand,
  AdminDeleteUserCommand,
  type CognitoIdentityProviderClient,
  SignUpCommand,
} from '@aws-sdk/client-cognito-identity-provider';
import type { PeopleDirectory, SignUpOutcome } from '#ports/people';

export interface CognitoDirectoryOptions {
  readonly userPoolId: string;
  readonly clientId: string;
  /** Confirm each sign-up at once (the local runtime): no confirmation code by e-mail. */
  readonly autoConfirm: boolean;
  /**
   * Where invitations go when the pool sends none (the local runtime prints them): the adapter chooses the
   * temporary password and hands it here. Unset: the pool chooses it and e-mails it (Cognito in AWS).
   */
  readonly deliver?: (invitation: Invitation) => void;
}

export interface Invitation {
  readonly email: string;
  readonly temporaryPassword: string;
}

/** A temporary password the pool's policy takes (lower, upper, digit, symbol; 8+), from 96 random bits. */
export function temporaryPassword(): string {
  return `Tmp-${randomBytes(12).toString('base64url')}-7a`;
}

const named = (error: unknown, name: string) => (error as { name?: string } | null)?.name === name;

export class CognitoPeopleDirectory implements PeopleDirectory {
  constructor(
    private readonly client: CognitoIdentityProviderClient,
    private readonly options: CognitoDirectoryOptions,
  ) {}

  async signUp(email: string, password: string): Promise<SignUpOutcome> {
    let confirmed: boolean;
    try {
      const answer = await this.client.send(
        new SignUpCommand({
          ClientId: this.options.clientId,
          Username: email,
          Password: password,
          UserAttributes: [{ Name: 'email', Value: email }],
        }),
      );
      confirmed = answer.UserConfirmed === true;
    } catch (error) {
      if (named(error, 'UsernameExistsException')) return { kind: 'exists' };
      if (named(error, 'InvalidPasswordException')) {
        return { kind: 'refused', field: 'password', message: (error as Error).message };
      }
      // The pool's own check of an attribute (an e-mail it does not take): the caller's input, not a fault.
      if (named(error, 'InvalidParameterException')) {
        return { kind: 'refused', field: 'email', message: (error as Error).message };
      }
      throw error;
    }
    if (!confirmed && this.options.autoConfirm) {
      await this.client.send(new AdminConfirmSignUpCommand({ UserPoolId: this.options.userPoolId, Username: email }));
      confirmed = true;
    }
    return { kind: 'created', confirmed };
  }

  async invite(email: string): Promise<'invited' | 'exists'> {
    const { deliver } = this.options;
    const password = temporaryPassword();
    try {
      await this.client.send(
        new AdminCreateUserCommand({
          UserPoolId: this.options.userPoolId,
          Username: email,
          // The invitation goes to this address, which the person proves by signing in with its temporary password.
          UserAttributes: [
            { Name: 'email', Value: email },
            { Name: 'email_verified', Value: 'true' },
          ],
          ...(deliver ? { TemporaryPassword: password, MessageAction: 'SUPPRESS' as const } : {}),
          DesiredDeliveryMediums: ['EMAIL'],
        }),
      );
      deliver?.({ email, temporaryPassword: password });
      return 'invited';
    } catch (error) {
      if (named(error, 'UsernameExistsException')) return 'exists';
      throw error;
    }
  }

  async remove(email: string): Promise<void> {
    try {
      await this.client.send(new AdminDeleteUserCommand({ UserPoolId: this.options.userPoolId, Username: email }));
    } catch (error) {
      if (!named(error, 'UserNotFoundException')) throw error;
    }
  }
}
