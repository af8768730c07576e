/**
 * People's use cases with in-memory ports (core/dashboard/members.ts, my-account.ts, core/auth/*): the stores, a
 * people directory that answers what a test says (and knows the accounts it made), and a clock a test moves.
 */
import type { Person } from '#core/auth/people';
import type { MembersDeps } from '#core/dashboard/members';
import type { Caller } from '#core/tenancy/tenancy';
import type { PeopleDirectory, SignUpOutcome } from '#ports/people';
import type { Role } from '#ports/stores';
import {
  InMemoryInvitationStore,
  InMemoryMemberStore,
  InMemoryMembershipStore,
  InMemoryOrganizationStore,
  InMemoryTokenStore,
} from './in-memory-ports';

/** A directory of accounts by address; each answer can be scripted (an outcome, or an Error to throw). */
export class ScriptedDirectory implements PeopleDirectory {
  /** address → sub of the accounts it holds. */
  readonly accounts = new Map<string, string>();
  signUpAnswer: SignUpOutcome | Error | undefined;
  inviteAnswer: Error | undefined;
  readonly calls: string[] = [];
  private made = 0;

  async signUp(email: string): Promise<SignUpOutcome> {
    this.calls.push(`signUp ${email}`);
    if (this.signUpAnswer instanceof Error) throw this.signUpAnswer;
    if (this.signUpAnswer) return this.signUpAnswer;
    if (this.accounts.has(email)) return { kind: 'exists' };
    return { kind: 'created', sub: this.account(email), confirmed: true };
  }

  async invite(email: string): Promise<'invited' | 'exists'> {
    this.calls.push(`invite ${email}`);
    if (this.inviteAnswer) throw this.inviteAnswer;
    if (this.accounts.has(email)) return 'exists';
    this.account(email);
    return 'invited';
  }

  async lookup(email: string): Promise<string | undefined> {
    return this.accounts.get(email);
  }

  /** The account of `email`, made when it has none (its `sub`). */
  account(email: string): string {
    let sub = this.accounts.get(email);
    if (!sub) {
      sub = `sub-${++this.made}-${email}`;
      this.accounts.set(email, sub);
    }
    return sub;
  }
}

export interface PeopleWorld {
  readonly deps: MembersDeps;
  readonly directory: ScriptedDirectory;
  readonly memberships: InMemoryMembershipStore;
  readonly invitations: InMemoryInvitationStore;
  readonly organizations: InMemoryOrganizationStore;
  readonly tokens: InMemoryTokenStore;
  readonly legacyMembers: InMemoryMemberStore;
  /** Moves the clock on. */
  advance(ms: number): void;
  now(): Date;
  /** The person signed in with `email`'s account, with their memberships as the authorizer reads them. */
  person(email: string): Promise<Person>;
  /** That person acting in `organizationId` (as the HTTP layer makes them, with their role there). */
  caller(email: string, organizationId: string): Promise<Caller>;
}

export function peopleWorld(
  options: { signUpMode?: MembersDeps['signUpMode']; start?: string; invitationTtlDays?: number } = {},
): PeopleWorld {
  let now = new Date(options.start ?? '2026-11-26T10:00:00.000Z').getTime();
  let ids = 0;
  const directory = new ScriptedDirectory();
  const memberships = new InMemoryMembershipStore();
  const invitations = new InMemoryInvitationStore();
  const organizations = new InMemoryOrganizationStore();
  const tokens = new InMemoryTokenStore();
  const legacyMembers = new InMemoryMemberStore();
  const deps: MembersDeps = {
    memberships,
    invitations,
    organizations,
    tokens,
    directory,
    clock: { now: () => new Date(now) },
    ids: { uuid: () => `00000000-0000-4000-8000-${String(++ids).padStart(12, '0')}` },
    signUpMode: options.signUpMode ?? 'open',
    invitationTtlDays: options.invitationTtlDays ?? 7,
  };
  const person = async (email: string): Promise<Person> => {
    const sub = directory.account(email);
    const mine = (await memberships.listByPerson(sub)).sort((a, b) => a.createdAt.localeCompare(b.createdAt));
    return { sub, email, memberships: mine.map(({ organizationId, role }) => ({ organizationId, role })) };
  };
  return {
    deps,
    directory,
    memberships,
    invitations,
    organizations,
    tokens,
    legacyMembers,
    advance: (ms) => {
      now += ms;
    },
    now: () => new Date(now),
    person,
    caller: async (email, organizationId) => {
      const who = await person(email);
      const role: Role | undefined = who.memberships.find((m) => m.organizationId === organizationId)?.role;
      if (!role) throw new Error(`${email} is not a member of ${organizationId}`);
      return { organizationId, tokenId: `person:${who.sub}`, scopes: ['dashboard'], role, email };
    },
  };
}
