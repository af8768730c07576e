/** What the operator scripts (redrive, reindex) share: a deployed stage's outputs, their `--local` option, their exit. */
import { readFileSync } from 'node:fs';

/** The stack's outputs through CloudFormation (DescribeStacks), when its client is installed. */
export async function stackOutputs(stackName: string): Promise<Record<string, string>> {
  // Loaded by name: the CloudFormation client is a dev dependency of the deploy tooling, not of the functions.
  const moduleName = '@aws-sdk/client-cloudformation';
  let cloudFormation: {
    CloudFormationClient: new (config: object) => { send(command: unknown): Promise<unknown>; destroy(): void };
    DescribeStacksCommand: new (input: { StackName: string }) => unknown;
  };
  try {
    cloudFormation = await import(moduleName);
  } catch {
    throw new Error(`${moduleName} is not installed: give --outputs <cdk-outputs.json>`);
  }
  const client = new cloudFormation.CloudFormationClient({});
  try {
    const answer = (await client.send(new cloudFormation.DescribeStacksCommand({ StackName: stackName }))) as {
      Stacks?: { Outputs?: { OutputKey?: string; OutputValue?: string }[] }[];
    };
    return Object.fromEntries(
      (answer.Stacks?.[0]?.Outputs ?? []).map((output) => [output.OutputKey ?? '', output.OutputValue ?? '']),
    );
  } finally {
    client.destroy();
  }
}

/**
 * The outputs named, from a `cdk deploy --outputs-file` file when given, else from the stack of the stage
 * (`agent-platform-<stage>`, default dev). Throws naming the first one missing.
 */
export async function requiredOutputs<K extends string>(
  names: readonly K[],
  source: { outputs?: string; stage?: string },
): Promise<Record<K, string>> {
  let found: Record<string, string>;
  let where: string;
  if (source.outputs) {
    const stacks = JSON.parse(readFileSync(source.outputs, 'utf8')) as Record<string, Record<string, string>>;
    found = Object.values(stacks).find((outputs) => names.every((name) => outputs[name])) ?? {};
    where = source.outputs;
  } else {
    where = `stack agent-platform-${source.stage ?? 'dev'}`;
    found = await stackOutputs(`agent-platform-${source.stage ?? 'dev'}`);
  }
  const missing = names.find((name) => !found[name]);
  if (missing) throw new Error(`${where} has no output ${missing}`);
  return Object.fromEntries(names.map((name) => [name, found[name]])) as Record<K, string>;
}

/** `--local` alone (last, or before another option) means the default DATA_DIR: given to parseArgs as `--local=`. */
export function withLocalDefault(argv: readonly string[]): string[] {
  return argv.map((arg, i) =>
    arg === '--local' && (i + 1 >= argv.length || argv[i + 1].startsWith('--')) ? '--local=' : arg,
  );
}

/** Runs a script's `main` when the file is run (not imported by a test): its code is the exit code; a throw, 1. */
export function runMain(module: NodeJS.Module, main: (argv: readonly string[]) => Promise<number>): void {
  if (require.main !== module) return;
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error: unknown) => {
      console.error(error instanceof Error ? error.message : error);
      process.exit(1);
    },
  );
}
