/**
 * Composition root of the flow runtime (webhook, app events, the flow runner, the schedule tick) and the definition
 * endpoints: the DynamoDB stores, the model resolver, outbound HTTP and the browser behind their guards, analytics,
 * default retrieval and the retrieval tools through the retrieval container (with the generate endpoint's model), and
 * the flow runner's queue with the budget of a request's run (docs/flows.md, "Long runs"), and the organizations' flow
 * work budget in the rate limits' counters (docs/rate-limits.md, "Flow work").
 */
import { GuardedImageDownloader } from '#adapters/network/guarded-download';
import { GuardedOutboundHttp } from '#adapters/network/outbound-http';
import { allowPrivateNetworkFromEnv } from '#adapters/network/url-guard';
import { SqsFlowRunQueue } from '#adapters/queue/sqs-flow-runs';
import { AnalyticsRecorder } from '#core/analytics/track';
import type { AttachmentDeps } from '#core/flows/attachments';
import { signingSecrets } from '#core/flows/callback-signing';
import type { DefaultRetrievalRunner, FlowRuntimeDeps } from '#core/flows/run-context';
import { runDefaultRetrieval } from '#core/retrieval/default-retrieval';
import { type AgentCodeFunctions, type BrowserDriver, MAX_RUN_DELAY_SECONDS, OutboundError } from '#ports/flows';
import { config } from '#shared/config';
import { handlerEnvironment, handlerVariable } from '#shared/environment';
import { logger } from '#shared/logger';
import { sqsClient } from './clients/sqs';
import { analyticsStore, blobsStore, cachedAgentsStore, clock, ids } from './container';
import { definitionStore, sessionStore } from './definition-container';
import { flowModelResolverFromEnv } from './flow-model';
import { mcpClient } from './mcp-client';
import { operationalMetrics } from './metrics';
import { generateModelFromEnv } from './model';
import { once } from './once';
import { flowWorkBudget } from './rate-limiter';
import { retrievalContainer } from './retrieval-container';

const models = once(() => flowModelResolverFromEnv());
const flowRuns = once(() => config.flowRuns());
// Built on first hand-over: only the webhook, app-event and flow runner functions are given the queue.
const runQueue = once(
  // The configured endpoint, not the queue URL's host (the local engine's is not resolvable everywhere).
  () => new SqsFlowRunQueue(sqsClient(), config.flowRunQueueUrl()),
);
const generateModel = once(() => generateModelFromEnv());
const http = once(() => new GuardedOutboundHttp({ allowPrivateNetwork: allowPrivateNetworkFromEnv() }));
// Built on first use: only an invocation with attached images (webhook, app events) needs the documents bucket.
const attachments = once(
  (): AttachmentDeps => ({
    blobs: blobsStore(),
    downloads: new GuardedImageDownloader({ allowPrivateNetwork: allowPrivateNetworkFromEnv() }),
  }),
);
const recorder = once(
  () =>
    new AnalyticsRecorder(analyticsStore(), ids, {
      onBackgroundError: (error) => logger.warn('analytics write failed; it is retried', { error: error as Error }),
    }),
);

/**
 * BROWSER_DRIVER picks where browserTask nodes run, loaded only when one runs: `playwright` (the local runtime's,
 * and the default) in Chromium in this process, through playwright-core; `lambda` (the stack's flow functions) in
 * the BrowserTask function, invoked with the task (BROWSER_TASK_FUNCTION). Either way the task's model comes from
 * this container's resolver: here directly, there from the same configuration.
 */
let browser: BrowserDriver | undefined;
const browserDriver: BrowserDriver = {
  name: 'lazy',
  run: async (request) => {
    let driver = browser;
    if (!driver) {
      const choice = handlerVariable('BROWSER_DRIVER') || 'playwright';
      if (choice === 'lambda') {
        const { lambdaBrowserDriverFromEnv } = await import('./clients/lambda');
        driver = lambdaBrowserDriverFromEnv();
      } else if (choice === 'playwright') {
        // Left out of the functions' bundles (lib/constructs/service-function.ts): only the local runtime has it.
        const playwright = await import('#adapters/browser/playwright-driver').catch(() => undefined);
        if (!playwright) {
          throw new OutboundError(
            'BROWSER_UNAVAILABLE',
            'This function has no browser: BROWSER_DRIVER=lambda runs one',
          );
        }
        driver = playwright.browserDriverFromEnv(handlerEnvironment(), models());
      } else {
        throw new OutboundError(
          'BROWSER_UNAVAILABLE',
          `BROWSER_DRIVER=${choice.slice(0, 40)} is not a browser driver: playwright (this process) or lambda`,
        );
      }
      browser = driver;
    }
    return driver.run(request);
  },
  close: async () => {
    await browser?.close();
    browser = undefined;
  },
};

/**
 * Agent code deployed as Lambda functions (docs/agent-code.md), loaded at the first call: Lambda's Invoke API; or,
 * in the local runtime started with AGENT_CODE=<module>, that module in this process for every function and URL.
 */
let codeFunctions: AgentCodeFunctions | undefined;
const agentCodeFunctions: AgentCodeFunctions = {
  // The module of AGENT_CODE is the agent's code whatever the definition names (its url too).
  get servesEveryTarget() {
    return Boolean(handlerVariable('AGENT_CODE'));
  },
  invoke: async (request) => {
    codeFunctions ??= await loadAgentCodeFunctions();
    return codeFunctions.invoke(request);
  },
};

async function loadAgentCodeFunctions(): Promise<AgentCodeFunctions> {
  const modulePath = handlerVariable('AGENT_CODE');
  if (!modulePath) return (await import('./clients/lambda')).lambdaAgentCodeFunctionsFromEnv();
  // Left out of the functions' bundles (lib/constructs/service-function.ts), as the Playwright driver is.
  const { ModuleAgentCodeFunctions } = await import('#adapters/agent-code/module-functions');
  return new ModuleAgentCodeFunctions({
    modulePath,
    secretsOf: async (organizationId, agentId) => {
      const secrets = (await cachedAgentsStore().get(organizationId, agentId))?.callbackSecrets;
      return secrets ? signingSecrets(secrets, clock.now()) : [];
    },
  });
}

/**
 * AI_MESSAGE_RETRY_DELAYS_SECONDS (comma-separated whole seconds, 0 to 900): the waits between an AI message's
 * delivery attempts; unset or unreadable: the default (core/flows/ai-message-retry.ts). Tests shorten them.
 */
const aiMessageRetryDelaysFromEnv = once((): readonly number[] | undefined => {
  const raw = handlerVariable('AI_MESSAGE_RETRY_DELAYS_SECONDS');
  if (!raw) return undefined;
  const delays = raw.split(',').map((part) => Number(part.trim()));
  return delays.every((d) => Number.isInteger(d) && d >= 0 && d <= MAX_RUN_DELAY_SECONDS) ? delays : undefined;
});

const defaultRetrieval: DefaultRetrievalRunner = async (request) => {
  const outcome = await runDefaultRetrieval(
    retrievalContainer,
    { organizationId: request.organizationId, tokenId: 'flow-runtime', scopes: [] },
    request,
  );
  return outcome.systemMessage;
};

export const flowContainer = {
  // Through the read cache: a rotation through the same store empties it; another container's within 5 s.
  get agents() {
    return cachedAgentsStore();
  },
  get definitions() {
    return definitionStore();
  },
  get sessions() {
    return sessionStore();
  },
  get models() {
    return models();
  },
  get http() {
    return http();
  },
  get mcp() {
    return mcpClient();
  },
  agentCodeFunctions,
  get attachments() {
    return attachments();
  },
  get recorder() {
    return recorder();
  },
  get metrics() {
    return operationalMetrics();
  },
  browser: browserDriver,
  defaultRetrieval,
  knowledge: retrievalContainer,
  get generateModel() {
    return generateModel();
  },
  get aiMessageRetryDelays() {
    return aiMessageRetryDelaysFromEnv();
  },
  get runs() {
    return runQueue();
  },
  get work() {
    return flowWorkBudget();
  },
  get leaseMs() {
    return flowRuns().leaseMs;
  },
  /** FLOW_SYNC_BUDGET_MS: what a webhook or app event runs before it hands the run over (InvocationOptions). */
  get syncBudgetMs() {
    return flowRuns().syncBudgetMs;
  },
  clock: clock,
  ids: ids,
  // The stack of a failed invocation is kept here, in the service log; analytics get only its code and message.
  onFailure: (failure, error) => logger.warn('flow invocation failed', { ...failure, error: error as Error }),
} satisfies FlowRuntimeDeps & { syncBudgetMs: number };
