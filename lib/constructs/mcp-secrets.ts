/**
 * The bearer tokens of MCP servers that definitions may name (`mcpServers[].bearerSecret`, docs/flows.md "MCP
 * tools"), registered with `-c mcpSecrets=<name>=<origin>,…`: one Secrets Manager secret each, created without a
 * value as the model's API key is (model-api-key.ts), so no token is ever in the template; the deployer puts each
 * token in once. The flow and definition functions get MCP_SECRETS (name → origin and ARN) and GetSecretValue on
 * exactly these secrets; a token is sent to its origin only (lambdas/adapters/network/mcp-secrets.ts).
 */
import { CfnOutput, Validations } from 'aws-cdk-lib';
import { type CfnSecret, Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import type { McpSecretResource } from './resource-access';

export interface McpSecretSetting {
  /** The name definitions give as `bearerSecret`. */
  readonly name: string;
  /** `https://host[:port]`: the only origin the token is sent to. */
  readonly origin: string;
}

export interface McpSecretsProps {
  readonly secrets: readonly McpSecretSetting[];
}

export class McpSecrets extends Construct {
  readonly secrets: readonly McpSecretResource[];

  constructor(scope: Construct, id: string, props: McpSecretsProps) {
    super(scope, id);
    this.secrets = props.secrets.map(({ name, origin }, index) => {
      const secret = new Secret(this, `Secret${index}`, {
        description: `Bearer token of the MCP server ${origin}, named ${name} in definitions: put the token here after deploy`,
      });
      // Issued by the MCP server's owner, not generated: created empty and filled by the deployer.
      (secret.node.defaultChild as CfnSecret).addPropertyDeletionOverride('GenerateSecretString');
      Validations.of(secret).acknowledge({
        id: 'AwsSolutions-SMG4',
        reason:
          "A bearer token of a third party's MCP server is issued and rotated by that server's owner, not by a " +
          'rotation Lambda; the README says how to put a new token in the secret.',
      });
      new CfnOutput(scope, `McpSecretArn${index}`, {
        description: `Put the bearer token of MCP server ${name} (${origin}) here: aws secretsmanager put-secret-value`,
        value: secret.secretArn,
      });
      return { name, origin, secret };
    });
  }
}
