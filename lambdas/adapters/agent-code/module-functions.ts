/**
 * AgentCodeFunctions of the local runtime started with AGENT_CODE=<module> (docs/agent-code.md, "The local loop"):
 * the agent code a definition names (its `functionArn` or its `url`) is that module, run in this process with the
 * event a Lambda function would get. Its default export is the SDK's DefinedAgent, or a function that makes one from `{ secrets }`: the
 * calling agent's callback secrets, so the module verifies each call exactly as it will in AWS, with no secret to
 * copy by hand. Left out of the functions' bundles (lib/constructs/service-function.ts): only the local runtime has it.
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type AgentCodeFunctions, OutboundError, type OutboundResponse } from '#ports/flows';
import { functionUrlEvent, functionUrlResponse } from './function-url';

interface LambdaShaped {
  lambda(event: ReturnType<typeof functionUrlEvent>): Promise<unknown>;
}
type AgentModule = LambdaShaped | ((local: { readonly secrets: readonly string[] }) => LambdaShaped);

export interface ModuleAgentCodeOptions {
  /** The module's path, relative to the working directory (AGENT_CODE). */
  readonly modulePath: string;
  /** The secrets that sign the agent's calls now (the current one, and the previous while it is in force). */
  readonly secretsOf: (organizationId: string, agentId: string) => Promise<readonly string[]>;
}

export class ModuleAgentCodeFunctions implements AgentCodeFunctions {
  /** The module is the agent's code: a definition's `agentCode.url` is served by it as well. */
  readonly servesEveryTarget = true;
  private loaded: Promise<AgentModule> | undefined;

  constructor(private readonly options: ModuleAgentCodeOptions) {}

  async invoke(request: Parameters<AgentCodeFunctions['invoke']>[0]): Promise<OutboundResponse> {
    this.loaded ??= loadModule(this.options.modulePath);
    const exported = await this.loaded;
    const agent =
      typeof exported === 'function'
        ? exported({ secrets: await this.options.secretsOf(request.organizationId, request.agentId) })
        : exported;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new OutboundError('OUTBOUND_FAILED', `The agent code module timed out after ${request.timeoutMs} ms`, {
              timedOut: true,
            }),
          ),
        request.timeoutMs,
      );
    });
    try {
      const result = await Promise.race([agent.lambda(functionUrlEvent(request.headers, request.body)), timedOut]);
      return functionUrlResponse(result === undefined ? '' : JSON.stringify(result));
    } catch (error) {
      if (error instanceof OutboundError) throw error;
      // As a crashed function: its error stays in this process's output, the run is told it failed.
      console.error(`AGENT_CODE ${this.options.modulePath} failed:`, error);
      throw new OutboundError('OUTBOUND_FAILED', 'The agent code module failed (Unhandled)');
    } finally {
      clearTimeout(timer);
    }
  }
}

async function loadModule(modulePath: string): Promise<AgentModule> {
  const loaded = (await import(pathToFileURL(resolve(modulePath)).href)) as { default?: unknown; agent?: unknown };
  // A TypeScript module loaded as CommonJS has its default export one level down.
  let exported = loaded.default ?? loaded.agent;
  if (exported && typeof exported === 'object' && 'default' in exported && !('lambda' in exported)) {
    exported = (exported as { default: unknown }).default;
  }
  if (typeof exported === 'function') return exported as AgentModule;
  if (exported && typeof (exported as Partial<LambdaShaped>).lambda === 'function') return exported as LambdaShaped;
  throw new OutboundError(
    'OUTBOUND_FAILED',
    `AGENT_CODE ${modulePath} exports neither an agent (defineAgent) nor a function ({ secrets }) => agent`,
  );
}
