/**
 * The first owner of a deployment (docs/people.md, README "Deploy to AWS"): a new organization and its owner, invited
 * by the stack's user pool, which e-mails the temporary password. For a deployment by invitation (`-c signUp=invite`,
 * the default), where nobody can sign up; the owner then invites the others from the dashboard.
 *
 *   npx cdk deploy --outputs-file cdk-outputs.json
 *   npm run first-owner -- --outputs cdk-outputs.json --email you@example.com --organization "Acme Support"
 *
 * It runs the same use case as the API (core/dashboard/members.ts, createOwner) with the deploying credentials
 * (AdminCreateUser and AdminGetUser on the pool, PutItem and DeleteItem on the memberships and organizations tables),
 * and honours the SDK's AWS_ENDPOINT_URL_* variables, so it also runs against LocalStack or the local engines; there
 * `--print-temporary-password` prints the password instead of a mail that does not go out. A person who has an
 * account already (an owner of another organization) keeps it, and owns the new organization too.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { CognitoIdentityProviderClient } from '@aws-sdk/client-cognito-identity-provider';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import * as z from 'zod';
import { CognitoPeopleDirectory } from '#adapters/auth/cognito-directory';
import { DynamoMembershipStore } from '#adapters/store/dynamodb/membership-store';
import { DynamoOrganizationStore } from '#adapters/store/dynamodb/organization-store';
import { createOwner } from '#core/dashboard/members';
import { AppError } from '#core/errors';
import { email } from '../lambdas/handlers/http/dashboard/schemas';

const USAGE =
  'usage: npm run first-owner -- --outputs cdk-outputs.json --email you@example.com --organization "Name" [--print-temporary-password]';

/** What `cdk deploy --outputs-file` writes: stack name → output name → value. */
const outputsSchema = z.record(
  z.string(),
  z.object({
    UserPoolId: z.string().min(1),
    UserPoolClientId: z.string().min(1),
    MembershipsTableName: z.string().min(1),
    OrganizationsTableName: z.string().min(1),
  }),
);
const requestSchema = z.object({ email, organizationName: z.string().trim().min(1).max(100) });

export async function main(argv: readonly string[]): Promise<number> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      outputs: { type: 'string' },
      email: { type: 'string' },
      organization: { type: 'string' },
      'print-temporary-password': { type: 'boolean', default: false },
    },
  });
  if (!values.outputs || !values.email || !values.organization) {
    console.error(USAGE);
    return 2;
  }
  const stacks = outputsSchema.safeParse(JSON.parse(readFileSync(values.outputs, 'utf8')));
  const request = requestSchema.safeParse({ email: values.email, organizationName: values.organization });
  if (!stacks.success || Object.keys(stacks.data).length !== 1) {
    console.error(`${values.outputs}: expected the outputs of one platform stack (cdk deploy --outputs-file)`);
    return 2;
  }
  if (!request.success) {
    console.error(request.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('\n'));
    return 2;
  }
  const outputs = Object.values(stacks.data)[0];
  const dynamo = DynamoDBDocumentClient.from(new DynamoDBClient({}));
  const cognito = new CognitoIdentityProviderClient({});
  try {
    const answer = await createOwner(
      {
        memberships: new DynamoMembershipStore(dynamo, outputs.MembershipsTableName),
        organizations: new DynamoOrganizationStore(dynamo, outputs.OrganizationsTableName),
        directory: new CognitoPeopleDirectory(cognito, {
          userPoolId: outputs.UserPoolId,
          clientId: outputs.UserPoolClientId,
          autoConfirm: false,
          ...(values['print-temporary-password']
            ? {
                deliver: ({ temporaryPassword }) =>
                  console.log(`Temporary password of ${request.data.email}: ${temporaryPassword}`),
              }
            : {}),
        }),
        clock: { now: () => new Date() },
        ids: { uuid: () => randomUUID() },
      },
      request.data,
    );
    console.log(
      `Organization ${answer.organizationId} "${request.data.organizationName}": owner ${answer.email} ` +
        (answer.invitation === 'sent'
          ? values['print-temporary-password']
            ? '(sign in with the temporary password above)'
            : '(Cognito has e-mailed a temporary password)'
          : '(already in the user pool: their password stays theirs)'),
    );
    return 0;
  } catch (error) {
    if (error instanceof AppError) {
      console.error(`${error.code}: ${error.message}`);
      return 1;
    }
    throw error;
  } finally {
    cognito.destroy();
    dynamo.destroy();
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
