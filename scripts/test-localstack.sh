#!/usr/bin/env bash
# Deploys the stack to a running LocalStack with cdklocal and runs the HTTP suites against it.
# Needs: LocalStack 4.x started with LOCALSTACK_AUTH_TOKEN and ENFORCE_IAM=1 (checked below) on http://localhost:4566,
# and the aws CLI; cdklocal comes from the lockfile. Bedrock is not emulated there, so the stack is deployed with its DynamoDB chunk table as the
# knowledge index (-c knowledgeIndex=dynamodb), and open to sign-up (-c signUp=open: the access matrix signs people
# up; LocalStack must emulate Cognito user pools). See README, "Against LocalStack".
set -euo pipefail
cd "$(dirname "$0")/.."

export AWS_ACCESS_KEY_ID=${AWS_ACCESS_KEY_ID:-test} AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY:-test}
export AWS_DEFAULT_REGION=${AWS_DEFAULT_REGION:-us-east-1} AWS_REGION=${AWS_REGION:-us-east-1}
ENDPOINT=${LOCALSTACK_ENDPOINT:-http://localhost:4566}
curl -sf "$ENDPOINT/_localstack/health" >/dev/null || { echo "LocalStack is not running at $ENDPOINT"; exit 1; }

# IAM as AWS enforces it, or the run proves nothing about the stack's grants: a user with no policy must be refused.
probe_user="aps-iam-probe-$$"
aws --endpoint-url "$ENDPOINT" iam create-user --user-name "$probe_user" >/dev/null
probe_keys=$(aws --endpoint-url "$ENDPOINT" iam create-access-key --user-name "$probe_user" \
  --query 'AccessKey.[AccessKeyId,SecretAccessKey]' --output text)
if AWS_ACCESS_KEY_ID=$(cut -f1 <<<"$probe_keys") AWS_SECRET_ACCESS_KEY=$(cut -f2 <<<"$probe_keys") \
  aws --endpoint-url "$ENDPOINT" s3api list-buckets >/dev/null 2>&1; then
  echo "LocalStack does not enforce IAM: start it with ENFORCE_IAM=1"
  exit 1
fi

# cdklocal from the lockfile (aws-cdk-local, a devDependency), over the aws-cdk of the lockfile.
CDKLOCAL="npx --no-install cdklocal"
$CDKLOCAL bootstrap >/dev/null
$CDKLOCAL deploy -c knowledgeIndex=dynamodb -c models=offline -c signUp=open --require-approval never --outputs-file cdk.out/localstack-outputs.json

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

# The suites that hold against any deployment: the same list the stack-check runs (test/stack-suites.json).
# upload-expiry, which needs upload URLs of one second, runs only there (a second stack) and on the local runtime.
mapfile -t suites < <(node -e "for (const s of require('./test/stack-suites.json').suites) console.log(s)")
TEST_BASE_URL="$api_url" TEST_TOKENS="${tokens[0]},${tokens[1]}" npx jest "${suites[@]}" --runInBand
