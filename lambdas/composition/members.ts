/**
 * What sign-up and the members endpoints need (docs/people.md): the members and organizations tables and the people
 * directory, the user pool of COGNITO_USER_POOL_ID and COGNITO_CLIENT_ID (cognito-local's locally). SIGNUP_MODE
 * `open` lets anyone sign up (the local runtime; `-c signUp=open`); anything else is `invite`. SIGNUP_AUTO_CONFIRM
 * `true` confirms sign-ups at once (the local runtime, where no e-mail goes out).
 */
import { randomUUID } from 'node:crypto';
import { CognitoPeopleDirectory, type Invitation } from '#adapters/auth/cognito-directory';
import { DynamoMemberStore } from '#adapters/store/dynamodb/member-store';
import { DynamoOrganizationStore } from '#adapters/store/dynamodb/organization-store';
import { type MembersDeps, peopleNotConfigured, type SignUpMode } from '#core/dashboard/members';
import type { PeopleDirectory } from '#ports/people';
import type { Clock, IdGenerator } from '#ports/services';
import type { MemberStore, OrganizationStore } from '#ports/stores';
import { config } from '#shared/config';
import { handlerVariable } from '#shared/environment';
import { cognitoClient } from './clients/cognito';
import { dynamoDocumentClient } from './clients/dynamodb';
import { once } from './once';

const members = once(() => new DynamoMemberStore(dynamoDocumentClient(), config.tableName('members')));
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

/**
 * The local runtime prints invitations on its console (where no e-mail goes out): set before the first request. In
 * AWS nothing sets it and Cognito e-mails them.
 */
export function printInvitationsWith(print: (invitation: Invitation) => void): void {
  invitationPrinter = print;
}
const clock: Clock = { now: () => new Date() };
const ids: IdGenerator = { uuid: () => randomUUID() };

export const membersContainer: MembersDeps = {
  get members(): MemberStore {
    return members();
  },
  get organizations(): OrganizationStore {
    return organizations();
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
};
