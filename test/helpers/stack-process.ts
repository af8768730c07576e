/** The synthesized stack run by bin/run-stack.ts in a process of its own, for test/stack. */
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import type { PeoplePool } from '../../lib/stack-check/stack-runner';
import { serviceCheckDir, throwViolations } from './openapi-check';

const ROOT = resolve(__dirname, '..', '..');

export interface StackReport {
  functions: number;
  functionsRun: number;
  /** Logical ids of the functions no request reached. */
  notRun: string[];
  invocations: Record<string, number>;
  callsChecked: number;
  denials: { functionId: string; action: string; resource: string }[];
  wiringErrors: string[];
  output: Record<string, string>;
  /** The Bedrock stand-in's requests by operation and status (`Retrieve 200`), and the constraints they broke. */
  bedrock: { requests: Record<string, number>; violations: unknown[] };
  /** The Secrets Manager stand-in's requests by operation and status (`GetSecretValue 200`). */
  secrets: Record<string, number>;
}

export interface StackProcess {
  readonly baseUrl: string;
  /** A token of its own organization with every scope. */
  readonly token: string;
  /** The same for a second organization. */
  readonly otherToken: string;
  /** A person signed in who owns `token`'s organization. */
  readonly owner: {
    readonly idToken: string;
    readonly organizationId: string;
    readonly email: string;
    readonly password: string;
  };
  /** The user pool its people sign in to. */
  readonly people: PeoplePool;
  /** The Secrets Manager stand-in, where a test puts a secret's value as the deployer does after deploy. */
  readonly secretsEndpoint: string;
  report(): Promise<StackReport>;
  /** The calls made so far that the roles of the template in `templateFile` would refuse (stack-runner's replay). */
  replay(templateFile: string): Promise<StackReport['denials']>;
  /** Invokes every scheduled rule and schedule now, as their rate would. */
  fireSchedules(): Promise<{ id: string; functionId: string; error?: string }[]>;
  stop(): Promise<void>;
}

export function startStackProcess(
  cloudAssembly: string,
  templateFile?: string,
  options: { readonly externalFunctions?: Readonly<Record<string, string>> } = {},
): Promise<StackProcess> {
  const args = [
    '--import',
    'tsx',
    'bin/run-stack.ts',
    cloudAssembly,
    ...(templateFile ? ['--template', templateFile] : []),
  ];
  // Every answer of its API Gateway is checked against the OpenAPI document (test/helpers/openapi-check.ts); stop
  // throws the violations.
  const checkDir = serviceCheckDir();
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'pipe'],
    env: {
      ...process.env,
      ...(options.externalFunctions
        ? { STACK_CHECK_EXTERNAL_FUNCTIONS: JSON.stringify(options.externalFunctions) }
        : {}),
      OPENAPI_CHECK_DIR: checkDir,
    },
  });
  let stdout = '';
  let stderr = '';
  const waiting: ((value: Record<string, unknown>) => void)[] = [];
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    let newline = stdout.indexOf('\n');
    while (newline >= 0) {
      const line = stdout.slice(0, newline);
      stdout = stdout.slice(newline + 1);
      if (line.startsWith('@@stack ')) waiting.shift()?.(JSON.parse(line.slice(8)) as Record<string, unknown>);
      newline = stdout.indexOf('\n');
    }
  });
  const next = () => new Promise<Record<string, unknown>>((resolveLine) => waiting.push(resolveLine));
  const exited = new Promise<void>((resolveExit) => child.once('exit', () => resolveExit()));
  return new Promise((resolveStart, reject) => {
    child.once('exit', (code) => reject(new Error(`bin/run-stack.ts exited (${code}): ${stderr.slice(-3000)}`)));
    next().then((message) => {
      const { baseUrl, token, otherToken, owner, people, secretsEndpoint } = message.ready as Pick<
        StackProcess,
        'baseUrl' | 'token' | 'otherToken' | 'owner' | 'people' | 'secretsEndpoint'
      >;
      resolveStart({
        baseUrl,
        token,
        otherToken,
        owner,
        people,
        secretsEndpoint,
        async report() {
          const answer = next();
          child.stdin.write('report\n');
          return (await answer).report as StackReport;
        },
        async fireSchedules() {
          const answer = next();
          child.stdin.write('fire\n');
          const { fired } = await answer;
          if (!Array.isArray(fired)) throw new Error(`firing the schedules failed: ${JSON.stringify(fired)}`);
          return fired as { id: string; functionId: string; error?: string }[];
        },
        async replay(templateFile) {
          const answer = next();
          child.stdin.write(`replay ${templateFile}\n`);
          const { replay } = await answer;
          if (!Array.isArray(replay)) throw new Error(`replay failed: ${JSON.stringify(replay)}`);
          return replay as StackReport['denials'];
        },
        async stop() {
          child.stdin.end();
          const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
          await exited;
          clearTimeout(timer);
          throwViolations(checkDir, `the stack's API Gateway (${baseUrl})`);
        },
      });
    }, reject);
  });
}
