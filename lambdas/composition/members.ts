/**
 * What sign-up, the members endpoints and a person's own endpoints need (docs/people.md): memberships, invitations,
 * organizations and tokens (a removed person's end with them), and the people directory, the user pool of
 * COGNITO_USER_POOL_ID and COGNITO_CLIENT_ID (cognito-local's locally). SIGNUP_MODE `open` lets anyone sign up and
 * found organizations (the local runtime; `-c signUp=open`); anything else is `invite`. SIGNUP_AUTO_CONFIRM `true`
 * confirms sign-ups at once (the local runtime, where no e-mail goes out). INVITATION_TTL_DAYS (default 7): how long
 * an invitation stays open.
 */
import { randomUUID } from 'node:crypto';
import { CognitoPeopleDirectory, type Invitation } from '#adapters/auth/cognito-directory';
import { DynamoInvitationStore } from '#adapters/store/dynamodb/invitation-store';
import { DynamoOrganizationStore } from '#adapters/store/dynamodb/organization-store';
import {
  DEFAULT_INVITATION_TTL_DAYS,
  type InvitationAnnouncement,
  type MembersDeps,
  peopleNotConfigured,
  type SignUpMode,
} from '#core/dashboard/members';
import type { PeopleDirectory } from '#ports/people';
import type { Clock, IdGenerator } from '#ports/services';
import type { InvitationStore, MembershipStore, OrganizationStore, TokenStore } from '#ports/stores';
import { config, positiveInteger } from '#shared/config';
import { handlerVariable } from '#shared/environment';
import { cognitoClient } from './clients/cognito';
import { dynamoDocumentClient } from './clients/dynamodb';
import { membershipStore, tokenStore } from './credential-stores';
import { once } from './once';

const invitations = once(() => new DynamoInvitationStore(dynamoDocumentClient(), config.tableName('invitations')));
const organizations = once(
  () => new DynamoOrganizationStore(dynamoDocumentClient(), config.tableName('organizations')),
);
const directory = once(() => {
  const userPoolId = handlerVariable('COGNITO_USER_POOL_ID');
  const clientId = handlerVariable('COGNITO_CLIENT_ID');
  if (!userPoolId || !clientId) return undefined;
  return new CognitoPeopleDirectory(cognitoClient(), {
    userPoolId,
    clientId,
    autoConfirm: handlerVariable('SIGNUP_AUTO_CONFIRM') === 'true',
    ...(invitationPrinter ? { deliver: invitationPrinter } : {}),
  });
});

let invitationPrinter: ((invitation: Invitation) => void) | undefined;
let announcer: ((invitation: InvitationAnnouncement) => void) | undefined;

/**
 * The local runtime prints invitations on its console (where no e-mail goes out): a new account's temporary password
 * (`printPassword`), and every invitation (`announce`). Set before the first request. In AWS nothing sets them:
 * Cognito e-mails a new account its temporary password, and an existing account sees the invitation when it signs in.
 */
export function printInvitationsWith(
  printPassword: (invitation: Invitation) => void,
  announce?: (invitation: InvitationAnnouncement) => void,
): void {
  invitationPrinter = printPassword;
  announcer = announce;
}
const clock: Clock = { now: () => new Date() };
const ids: IdGenerator = { uuid: () => randomUUID() };

export const membersContainer: MembersDeps = {
  get memberships(): MembershipStore {
    return membershipStore();
  },
  get invitations(): InvitationStore {
    return invitations();
  },
  get organizations(): OrganizationStore {
    return organizations();
  },
  get tokens(): TokenStore {
    return tokenStore();
  },
  get directory(): PeopleDirectory {
    const configured = directory();
    if (!configured) throw peopleNotConfigured();
    return configured;
  },
  clock,
  ids,
  get signUpMode(): SignUpMode {
    return handlerVariable('SIGNUP_MODE') === 'open' ? 'open' : 'invite';
  },
  get invitationTtlDays(): number {
    return positiveInteger('INVITATION_TTL_DAYS', DEFAULT_INVITATION_TTL_DAYS);
  },
  get announce() {
    return announcer;
  },
};
