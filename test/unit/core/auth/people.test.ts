/**
 * The rules of people on the dashboard that need no engine (core/auth/people.ts and the authorizer's policy): which
 * Authorization headers hold an ID token, the policy a person's token gets (the dashboard's routes only), a person's
 * caller and the owner rule. Their behaviour against cognito-local: test/integration/cognito-local.test.ts.
 */
import { authenticatePerson, idTokenOf, isPerson, requireOwner } from '#core/auth/people';
import { callerContext, callerFromContext } from '#core/auth/tokens';
import type { PersonVerifier } from '#ports/people';
import { dashboardArn, wholeApiArn } from '../../../../lambdas/handlers/auth/authorizer';
import { InMemoryMemberStore } from '../../../helpers/in-memory-ports';

const JWT = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl';

it('reads an ID token only from a bearer header of the JWT shape and bounded length', () => {
  expect(idTokenOf(`Bearer ${JWT}`)).toBe(JWT);
  expect(idTokenOf('Bearer aps_0123456789abcdef0123')).toBeUndefined();
  expect(idTokenOf(`Basic ${JWT}`)).toBeUndefined();
  expect(idTokenOf(`Bearer ${JWT}.extra`)).toBeUndefined();
  expect(idTokenOf(`Bearer eyJ${'a'.repeat(9000)}.b.c`)).toBeUndefined();
  expect(idTokenOf(undefined)).toBeUndefined();
});

it("gives a person's token a policy of the dashboard's routes only", () => {
  const arn = 'arn:aws:execute-api:eu-west-1:123456789012:abc123/prod/GET/dashboard/agents';
  expect(wholeApiArn(arn)).toBe('arn:aws:execute-api:eu-west-1:123456789012:abc123/prod/*');
  expect(dashboardArn(arn)).toBe('arn:aws:execute-api:eu-west-1:123456789012:abc123/prod/*/dashboard/*');
});

it('makes a member of an organization its caller with their role, and refuses anyone else', async () => {
  const members = new InMemoryMemberStore();
  await members.create({ email: 'a@example.com', organizationId: 'org-a', role: 'member', createdAt: '' });
  const people: PersonVerifier = {
    verify: async (token) =>
      token === 'good' ? { sub: 'sub-1', email: 'a@example.com', expiresAt: new Date() } : undefined,
  };
  const caller = await authenticatePerson({ people, members }, 'good', new Date());
  expect(caller).toEqual({
    organizationId: 'org-a',
    tokenId: 'person:sub-1',
    scopes: ['dashboard'],
    role: 'member',
    email: 'a@example.com',
  });
  expect(isPerson(caller)).toBe(true);
  // Through the authorizer's context and back, a role never widens.
  expect(callerFromContext(callerContext(caller))).toEqual(caller);
  expect(callerFromContext({ ...callerContext(caller), role: 'admin' })?.role).toBe('member');
  expect(() => requireOwner(caller, 'manage tokens')).toThrow('Only an owner of the organization can manage tokens');
  expect(() => requireOwner({ ...caller, role: 'owner' }, 'manage tokens')).not.toThrow();
  await expect(authenticatePerson({ people, members }, 'bad', new Date())).rejects.toMatchObject({ status: 401 });
  await expect(authenticatePerson({ people: undefined, members }, 'good', new Date())).rejects.toMatchObject({
    status: 401,
  });
  await members.create({ email: 'b@example.com', organizationId: 'org-b', role: 'owner', createdAt: '' });
  expect(await members.create({ email: 'b@example.com', organizationId: 'org-c', role: 'owner', createdAt: '' })).toBe(
    false,
  );
});
