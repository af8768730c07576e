/**
 * Composition root of the flow runtime (webhook, app events, the schedule tick) and the definition endpoints:
 * the DynamoDB stores, the model resolver, outbound HTTP and the browser behind their guards, analytics, and
 * default retrieval through the retrieval container.
 */
import { DynamoDefinitionStore, DynamoSessionStore } from '../adapters/aws/dynamodb/flow-stores';
import { GuardedOutboundHttp } from '../adapters/network/outbound-http';
import { allowPrivateNetworkFromEnv } from '../adapters/network/url-guard';
import { AnalyticsRecorder } from '../core/analytics/track';
import type { DefaultRetrievalRunner, FlowRuntimeDeps } from '../core/flows/runtime';
import { runDefaultRetrieval } from '../core/retrieval/default-retrieval';
import { type BrowserDriver, OutboundError } from '../ports/flows';
import { config, positiveInteger } from './config';
import { container, dynamoDocumentClient, once } from './container';
import { flowModelResolverFromEnv } from './flow-model';
import { logger } from './logger';
import { retrievalContainer } from './retrieval-container';

const definitions = once(() => new DynamoDefinitionStore(dynamoDocumentClient(), config.tableName('agentDefinitions')));
const sessions = once(
  () =>
    new DynamoSessionStore(
      dynamoDocumentClient(),
      config.tableName('sessions'),
      positiveInteger('SESSION_RETENTION_DAYS', 30),
    ),
);
const models = once(() => flowModelResolverFromEnv());
const http = once(() => new GuardedOutboundHttp({ allowPrivateNetwork: allowPrivateNetworkFromEnv() }));
const recorder = once(
  () =>
    new AnalyticsRecorder(container.analytics, container.ids, {
      onBackgroundError: (error) => logger.warn('analytics write failed; it is retried', { error: error as Error }),
    }),
);

/**
 * BROWSER_DRIVER=playwright (the local runtime sets it): Chromium through playwright-core, loaded only when a
 * browserTask runs. Unset (the stack's functions): browserTask nodes fail with BROWSER_UNAVAILABLE.
 */
let browser: BrowserDriver | undefined;
const browserDriver: BrowserDriver = {
  name: 'lazy',
  run: async (request) => {
    if (process.env.BROWSER_DRIVER !== 'playwright') {
      throw new OutboundError(
        'BROWSER_UNAVAILABLE',
        'No browser is configured for browserTask nodes in this deployment (BROWSER_DRIVER=playwright locally)',
      );
    }
    let driver = browser;
    if (!driver) {
      const { browserDriverFromEnv } = await import('../adapters/browser/playwright-driver');
      driver = browserDriverFromEnv();
      browser = driver;
    }
    return driver.run(request);
  },
  close: async () => {
    await browser?.close();
    browser = undefined;
  },
};

const defaultRetrieval: DefaultRetrievalRunner = async (request) => {
  const outcome = await runDefaultRetrieval(
    retrievalContainer,
    { organizationId: request.organizationId, tokenId: 'flow-runtime', scopes: [] },
    request,
  );
  return outcome.systemMessage;
};

export const flowContainer = {
  get agents() {
    return container.agents;
  },
  get definitions() {
    return definitions();
  },
  get sessions() {
    return sessions();
  },
  get models() {
    return models();
  },
  get http() {
    return http();
  },
  get recorder() {
    return recorder();
  },
  browser: browserDriver,
  defaultRetrieval,
  clock: container.clock,
  ids: container.ids,
  // The stack of a failed invocation is kept here, in the service log; analytics get only its code and message.
  onFailure: (failure, error) => logger.warn('flow invocation failed', { ...failure, error: error as Error }),
} satisfies FlowRuntimeDeps & { agents: unknown };
