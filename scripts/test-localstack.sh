#!/usr/bin/env bash
# Deploys the stack to a running LocalStack with cdklocal and runs the HTTP suites against it.
# Needs: LocalStack 4.x (started with LOCALSTACK_AUTH_TOKEN) on http://localhost:4566 and the aws CLI; cdklocal is
# fetched with npx. Bedrock is not emulated there, so the stack is deployed with its DynamoDB chunk table as the
# knowledge index (-c knowledgeIndex=dynamodb), and open to sign-up (-c signUp=open: the access matrix signs people
# up; LocalStack must emulate Cognito user pools). See README, "Against LocalStack".
set -euo pipefail
cd "$(dirname "$0")/.."

export AWS_ACCESS_KEY_ID=${AWS_ACCESS_KEY_ID:-test} AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY:-test}
export AWS_DEFAULT_REGION=${AWS_DEFAULT_REGION:-us-east-1} AWS_REGION=${AWS_REGION:-us-east-1}
ENDPOINT=${LOCALSTACK_ENDPOINT:-http://localhost:4566}
curl -sf "$ENDPOINT/_localstack/health" >/dev/null || { echo "LocalStack is not running at $ENDPOINT"; exit 1; }

CDKLOCAL="npx --yes aws-cdk-local@3.0.4"
$CDKLOCAL bootstrap >/dev/null
$CDKLOCAL deploy -c knowledgeIndex=dynamodb -c signUp=open --require-approval never --outputs-file cdk.out/localstack-outputs.json

outputs=cdk.out/localstack-outputs.json
value() { node -e "const o=Object.values(require('./$outputs'))[0]; const k=Object.keys(o).find(k=>k.startsWith('$1')); process.stdout.write(o[k]??'')"; }
api_url=$(value ApiUrl)
tokens_table=$(value TokensTableName)

# Two organizations with every scope: only the SHA-256 of each token is stored.
tokens=()
for org in a b; do
  token="aps_localstack_${org}_$(node -e "process.stdout.write(require('crypto').randomBytes(16).toString('hex'))")"
  hash=$(printf %s "$token" | sha256sum | cut -d' ' -f1)
  aws --endpoint-url "$ENDPOINT" dynamodb put-item --table-name "$tokens_table" --item "{
    \"tokenHash\":{\"S\":\"$hash\"},\"tokenId\":{\"S\":\"$(node -e 'process.stdout.write(crypto.randomUUID())')\"},
    \"organizationId\":{\"S\":\"$(node -e 'process.stdout.write(crypto.randomUUID())')\"},\"name\":{\"NULL\":true},
    \"scopes\":{\"L\":[{\"S\":\"dashboard\"},{\"S\":\"knowledge-management\"},{\"S\":\"analytics\"},{\"S\":\"webhook\"}]},
    \"createdAt\":{\"S\":\"$(date -u +%FT%T.000Z)\"}}"
  tokens+=("$token")
done

# upload-expiry needs second-long upload TTLs, which only the local runtime can be started with; flows needs the
# local scheduler's clock file and tool servers on the test's loopback, which Lambda containers cannot reach; faults
# and load kill and time a local worker process; hostile reads the local worker's memory, upload-sizes sets the
# limits and upload TTLs of the runtime it starts, local-engines tests the local engines themselves, and
# token-scopes counts the rows of the local tokens table; knowledge-base-delete stops, kills and starts a local
# worker and reads the runtime's data folder.
TEST_BASE_URL="$api_url" TEST_TOKENS="${tokens[0]},${tokens[1]}" npx jest test/integration test/api test/proof \
  --runInBand --testPathIgnorePatterns upload-expiry flows faults load hostile upload-sizes local-engines token-scopes cors \
  'knowledge-base-delete\.test'
