/**
 * The API key of the OpenAI-compatible model (`-c modelBaseUrl`, README "Models"): a Secrets Manager secret created
 * without a value, so no key is ever in the template, the assembly or the deploy's logs. The deployer puts the key
 * in it once (`aws secretsmanager put-secret-value --secret-id <ModelApiKeySecretArn> --secret-string <key>`); the
 * model-calling functions read it at their first model call and keep it for the life of the container
 * (lambdas/adapters/model/secret-api-key.ts).
 */
import { Validations } from 'aws-cdk-lib';
import { type CfnSecret, Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';

export class ModelApiKey extends Construct {
  readonly secret: Secret;

  constructor(scope: Construct, id: string) {
    super(scope, id);
    this.secret = new Secret(this, 'Secret', {
      description: 'API key of the OpenAI-compatible model server (README, "Models"): put the key here after deploy',
    });
    // The L2 construct generates a random value unless told one; an API key is issued by the provider, so the secret
    // is created empty (CloudFormation: neither SecretString nor GenerateSecretString) and filled by the deployer.
    (this.secret.node.defaultChild as CfnSecret).addPropertyDeletionOverride('GenerateSecretString');
    Validations.of(this.secret).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason:
        'An API key of a third-party model server is issued and rotated by that provider, not by a rotation Lambda; ' +
        'the README says how to put a new key in the secret.',
    });
  }
}
