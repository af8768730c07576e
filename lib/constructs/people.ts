/**
 * People's accounts (docs/people.md): the Cognito user pool people sign in to the dashboard with, and the console's
 * app client (no secret: a browser cannot keep one; SRP and password sign-in, refresh tokens). Names come from
 * CloudFormation. Sign-up is the deployer's choice (`-c signUp=open|invite`, default invite): with `invite` the pool
 * takes no self sign-up and an owner invites people (the first owner by the README's command).
 */
import { Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import {
  AccountRecovery,
  ClientAttributes,
  FeaturePlan,
  Mfa,
  UserPool,
  type UserPoolClient,
  UserPoolEmail,
} from 'aws-cdk-lib/aws-cognito';
import { Construct } from 'constructs';

export type SignUpMode = 'open' | 'invite';

export interface PeopleAccountsProps {
  readonly signUp: SignUpMode;
  /**
   * Send the pool's mail (invitations, verification and reset codes) through SES from this verified address: Cognito's
   * own sender allows a few dozen messages a day per account (docs/people.md, "Mail"). Default: Cognito's sender.
   */
  readonly email?: { readonly from: string; readonly sesRegion?: string };
}

export class PeopleAccounts extends Construct {
  public readonly userPool: UserPool;
  public readonly client: UserPoolClient;
  public readonly signUpMode: SignUpMode;

  constructor(scope: Construct, id: string, props: PeopleAccountsProps) {
    super(scope, id);
    this.signUpMode = props.signUp;
    this.userPool = new UserPool(this, 'UserPool', {
      signInAliases: { email: true },
      // Addresses are compared as the members table stores them: lower case.
      signInCaseSensitive: false,
      selfSignUpEnabled: props.signUp === 'open',
      autoVerify: { email: true },
      keepOriginal: { email: true },
      standardAttributes: { email: { required: true, mutable: true } },
      // The API checks the same rules first (lambdas/handlers/http/dashboard/schemas.ts, `password`).
      passwordPolicy: {
        minLength: 8,
        requireLowercase: true,
        requireUppercase: true,
        requireDigits: true,
        requireSymbols: true,
        tempPasswordValidity: Duration.days(7),
      },
      mfa: Mfa.OPTIONAL,
      mfaSecondFactor: { otp: true, sms: false },
      accountRecovery: AccountRecovery.EMAIL_ONLY,
      email: props.email
        ? UserPoolEmail.withSES({
            fromEmail: props.email.from,
            fromName: 'Agent platform',
            ...(props.email.sesRegion ? { sesRegion: props.email.sesRegion } : {}),
          })
        : UserPoolEmail.withCognito(),
      featurePlan: FeaturePlan.ESSENTIALS,
      userInvitation: {
        emailSubject: 'Your invitation to the agent platform',
        emailBody:
          'You are invited to the agent platform. Sign in as {username} with the temporary password {####}; you will choose your own.',
      },
      deletionProtection: true,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    this.client = this.userPool.addClient('ConsoleClient', {
      generateSecret: false,
      authFlows: { userSrp: true, userPassword: true },
      // The console refreshes its ID token (an hour) with the refresh token (30 days).
      idTokenValidity: Duration.hours(1),
      accessTokenValidity: Duration.hours(1),
      refreshTokenValidity: Duration.days(30),
      // "Incorrect user name or password" for an unknown person as for a wrong password.
      preventUserExistenceErrors: true,
      // A person may not change their own address (UpdateUserAttributes): invitations are made to addresses, so the
      // address a person signs in with stays the one the pool verified. Their name alone is theirs to change.
      writeAttributes: new ClientAttributes().withStandardAttributes({ fullname: true }),
      enableTokenRevocation: true,
    });
    Validations.of(this.userPool).acknowledge(
      {
        id: 'AwsSolutions-COG2',
        reason:
          'MFA is optional (TOTP, no SMS): each person may turn it on; requiring it would make every first sign-in, ' +
          "an invited member's included, a TOTP enrolment. Deployers who need it set mfa to REQUIRED here (docs/people.md).",
      },
      {
        id: 'AwsSolutions-COG8',
        reason:
          'Essentials feature plan: the Plus plan (threat protection) is billed per monthly active person; the ' +
          'dashboard is guarded by the API rate limits and the web ACL. Deployers who want it set featurePlan to PLUS ' +
          '(docs/people.md).',
      },
    );
  }

  /** The `iss` of the pool's ID tokens: https://cognito-idp.<region>.amazonaws.com/<pool id>. */
  get issuer(): string {
    return this.userPool.userPoolProviderUrl;
  }
}
