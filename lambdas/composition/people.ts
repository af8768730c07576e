/**
 * What the authorizer needs for people (docs/people.md): the verifier of their ID tokens, configured by
 * COGNITO_ISSUER and COGNITO_CLIENT_ID (unset: no person is accepted), their memberships, and the members table of
 * before issue 33 that their first sign-in moves to a membership. Apart from `container` so that only the authorizer
 * bundles `jose`.
 */
import { CognitoIdTokenVerifier } from '#adapters/auth/cognito-jwt';
import { DynamoMemberStore } from '#adapters/store/dynamodb/member-store';
import type { PersonDeps } from '#core/auth/people';
import type { PersonVerifier } from '#ports/people';
import type { MemberStore, MembershipStore } from '#ports/stores';
import { config } from '#shared/config';
import { handlerVariable } from '#shared/environment';
import { dynamoDocumentClient } from './clients/dynamodb';
import { membershipStore } from './credential-stores';
import { once } from './once';

const verifier = once((): PersonVerifier | undefined => {
  const issuer = handlerVariable('COGNITO_ISSUER');
  const clientId = handlerVariable('COGNITO_CLIENT_ID');
  return issuer && clientId ? new CognitoIdTokenVerifier({ issuer, clientId }) : undefined;
});
const legacyMembers = once(() => new DynamoMemberStore(dynamoDocumentClient(), config.tableName('members')));

export const peopleContainer: PersonDeps = {
  get people(): PersonVerifier | undefined {
    return verifier();
  },
  get memberships(): MembershipStore {
    return membershipStore();
  },
  get legacyMembers(): MemberStore {
    return legacyMembers();
  },
};
