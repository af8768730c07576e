/**
 * PeopleDirectory on an Amazon Cognito user pool whose user names are e-mails (the stack's, or cognito-local's:
 * lib/local/cognito.ts). Sign-up is the pool's public SignUp through the platform's app client; invitations and
 * look-ups are the administrator calls the function's role is granted. Nobody's account is ever deleted by the
 * platform: a person may belong to several organizations, and leaving one ends only that membership.
 */

import { randomBytes } from 'node:crypto';
import {
  AdminConfirmSignUpCommand,
  AdminCreateUserCommand,
  AdminGetUserCommand,
  AdminSetUserPasswordCommand,
  AdminUpdateUserAttributesCommand,
  type CognitoIdentityProviderClient,
  SignUpCommand,
} from '@aws-sdk/client-cognito-identity-provider';
import type { PeopleDirectory, SignUpOutcome } from '#ports/people';

export interface CognitoDirectoryOptions {
  readonly userPoolId: string;
  readonly clientId: string;
  /** Confirm each sign-up, and its address, at once (the local runtime): no confirmation code by e-mail. */
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
    let sub: string;
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
      sub = answer.UserSub as string;
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
      // What the code Cognito e-mails in AWS proves, taken as proven where no e-mail goes out: the address is theirs.
      await this.client.send(
        new AdminUpdateUserAttributesCommand({
          UserPoolId: this.options.userPoolId,
          Username: email,
          // cognito-local verifies an address only given with it (Cognito takes either).
          UserAttributes: [
            { Name: 'email', Value: email },
            { Name: 'email_verified', Value: 'true' },
          ],
        }),
      );
      confirmed = true;
    }
    return { kind: 'created', sub, confirmed };
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
      if (!named(error, 'UsernameExistsException')) throw error;
    }
    return this.inviteAgain(email, password);
  }

  /**
   * An address the pool has: a person who never signed in (their temporary password unused, perhaps expired after 7
   * days) gets a new one, as at their first invitation; anyone else keeps theirs and gets nothing (`exists`).
   */
  private async inviteAgain(email: string, password: string): Promise<'invited' | 'exists'> {
    const { deliver, userPoolId } = this.options;
    if (!deliver) {
      try {
        // Cognito sends the invitation again with a new temporary password, for a person who never signed in only.
        await this.client.send(
          new AdminCreateUserCommand({ UserPoolId: userPoolId, Username: email, MessageAction: 'RESEND' }),
        );
        return 'invited';
      } catch (error) {
        if (named(error, 'UnsupportedUserStateException')) return 'exists';
        throw error;
      }
    }
    // Where invitations are printed (cognito-local, which has no RESEND): the same, by hand.
    const { UserStatus } = await this.client.send(new AdminGetUserCommand({ UserPoolId: userPoolId, Username: email }));
    if (UserStatus !== 'FORCE_CHANGE_PASSWORD') return 'exists';
    await this.client.send(
      new AdminSetUserPasswordCommand({
        UserPoolId: userPoolId,
        Username: email,
        Password: password,
        Permanent: false,
      }),
    );
    deliver({ email, temporaryPassword: password });
    return 'invited';
  }

  async lookup(email: string): Promise<string | undefined> {
    try {
      const { UserAttributes } = await this.client.send(
        new AdminGetUserCommand({ UserPoolId: this.options.userPoolId, Username: email }),
      );
      return UserAttributes?.find((attribute) => attribute.Name === 'sub')?.Value;
    } catch (error) {
      if (named(error, 'UserNotFoundException')) return undefined;
      throw error;
    }
  }
}
