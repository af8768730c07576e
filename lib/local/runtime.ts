/**
 * The whole service on one machine: engines, the handlers' configuration pointed at them, organizations for the
 * development tokens, and the HTTP server of the local router.
 */

import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import type { Duplex } from 'node:stream';
import { SQSClient } from '@aws-sdk/client-sqs';
import { LanceKnowledgeIndex } from '#adapters/index/lancedb';
import { container } from '#composition/container';
import { useKnowledgeIndex } from '#composition/knowledge-index';
import { membersContainer, printInvitationsWith } from '#composition/members';
import { reportMetricsAlsoTo } from '#composition/metrics';
import { bearerToken, generateToken, hashToken, issueToken } from '#core/auth/tokens';
import type { TickOutcome } from '#core/flows/scheduler';
import { positiveInteger } from '#shared/config';
import { corsPolicyFromEnv } from '#shared/cors';
import { configureHandlerEnvironment, handlerVariable } from '#shared/environment';
import { logger } from '#shared/logger';
import { LOCAL_METRICS_NAMESPACE } from '#shared/metrics';
import { RESOURCE_ENV, ROUTES, SCOPES, type TableName } from '../routes';
import { clientLimitsFromEnv } from './client-limits';
import { consoleOrigins, ensureDevUser, type LocalCognito, startCognito } from './cognito';
import { consoleHandler } from './console';
import {
  acquireWorkerLock,
  type EnginesFile,
  readEnginesFile,
  removeEnginesFile,
  writeEnginesFile,
} from './data-folder';
import { embedderFromEnv } from './embedder';
import { LOCAL_REGION } from './engine-credentials';
import { DOCUMENTS_BUCKET, type EngineEndpoints, type Engines, startEngines } from './engines';
import { startEnginesProcess } from './engines-process';
import { MetricsCollector } from './metrics-collector';
import type { Answer } from './openapi-check';
import { type QueueWorker, queueDrained, type SqsHandler, startQueueWorker } from './queue-worker';
import { answerClientError, createRouter } from './router';
import { startTtlSweep, ttlSweepIntervalFromEnv } from './ttl-sweep';
import { startWorkerProcess } from './worker-process';

export interface LocalRuntimeOptions {
  readonly host?: string;
  readonly port?: number;
  /** Port of the local S3 endpoint that upload URLs point at. */
  readonly s3Port?: number;
  readonly dataDir?: string;
  /** Comma-separated development tokens: one organization each, all scopes. */
  readonly devTokens?: string;
  readonly log?: (line: string) => void;
  /**
   * Where the processing worker and the flow runner run: `true` in this process (the default here: tests and
   * benchmarks that drive the worker), `'process'` in a process of its own that the runtime starts and stops
   * (`npm start`'s default: lib/local/worker-process.ts), false nowhere: a separate worker started by hand
   * (`bin/worker.ts`, which finds the engines through DATA_DIR/engines.json).
   */
  readonly worker?: boolean | 'process';
  /**
   * Where the engines (DynamoDB, S3, SQS) run: `'process'` in a child process of their own
   * (lib/local/engines-process.ts; `npm start`'s default, LOCAL_ENGINES=process), so their work uses another core
   * than the router's; `'inline'` in this process (the default here: tests, which start many runtimes).
   */
  readonly engines?: 'inline' | 'process';
  /** Told when the engines process exits unasked (`engines: 'process'`): nothing can be served after it. */
  readonly onEnginesExit?: (code: number | null, signal: NodeJS.Signals | null) => void;
  /** Visibility timeout of the processing queue (default 60 s). */
  readonly visibilityTimeoutSeconds?: number;
  /** Visibility timeout of the flow runner's queue (default FLOW_RUN_VISIBILITY_TIMEOUT_SECONDS, else 60 s). */
  readonly flowRunVisibilityTimeoutSeconds?: number;
  /** Most bytes one request may store through the local S3 endpoint (MAX_UPLOAD_BYTES; engines.ts has the default). */
  readonly maxUploadBytes?: number;
  /** The scheduler's clock (tests move it by hand); default the system clock. */
  readonly scheduleClock?: { now(): Date };
  /** How often the scheduler ticks; 0 = never by itself (tests call `scheduler.tick()`). Default 15 s. */
  readonly scheduleIntervalMs?: number;
  /** Told the outcome of every tick once it has run, with the "now" it ran at (tests wait on it instead of sleeping). */
  readonly onScheduleTick?: (now: Date, outcome: TickOutcome) => void;
  /**
   * Start cognito-local (people's accounts: lib/local/cognito.ts) beside the other engines; `npm start` does unless
   * COGNITO=off. Default false here (the benchmarks and most tests need no people).
   */
  readonly cognito?: boolean;
  /** COGNITO_PORT: the port cognito-local answers on (default a free one). */
  readonly cognitoPort?: number;
  /** DEV_USER=email:password: that person exists in the pool, confirmed (with `cognito`). */
  readonly devUser?: string;
}

/**
 * The local stand-in for EventBridge Scheduler: every tick sends the due fires of schedule triggers to the flow
 * runner's queue, which the flow runner (in this process, the worker process, or `npm run worker`) consumes.
 */
export interface LocalScheduler {
  tick(): Promise<TickOutcome>;
}

export interface LocalRuntime {
  readonly url: string;
  readonly engines: Engines;
  /** People's accounts, when started (`cognito`). */
  readonly cognito: LocalCognito | undefined;
  readonly worker: QueueWorker | undefined;
  readonly scheduler: LocalScheduler;
  stop(): Promise<void>;
}

const ROOT = resolve(__dirname, '..', '..');

/**
 * Points the handlers' AWS clients and resource names at the engines, as the stack's environment does in AWS. They
 * are handed to the handlers (lambdas/shared/environment.ts), not written into `process.env`: the variables the user
 * started the process with stay as they were, and win for what the runtime does not set (POWERTOOLS_LOG_LEVEL,
 * BROWSER_DRIVER, model and embedder settings).
 */
export function configureHandlers(
  engines: EngineEndpoints,
  cognito?: Pick<LocalCognito, 'issuer' | 'clientId' | 'userPoolId' | 'endpoint'>,
): void {
  const tables = Object.fromEntries(
    (Object.entries(RESOURCE_ENV.tables) as [TableName, string][]).map(([logical, variable]) => [
      variable,
      engines.tableNames[logical],
    ]),
  );
  const logLevel = process.env.POWERTOOLS_LOG_LEVEL || 'WARN';
  configureHandlerEnvironment({
    AWS_REGION: LOCAL_REGION,
    AWS_ACCESS_KEY_ID: engines.credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: engines.credentials.secretAccessKey,
    // The engines' own keys: a session token of the user's shell must not be sent with them.
    AWS_SESSION_TOKEN: undefined,
    AWS_ENDPOINT_URL_DYNAMODB: engines.dynamodbEndpoint,
    AWS_ENDPOINT_URL_S3: engines.s3Endpoint,
    AWS_ENDPOINT_URL_SQS: engines.sqsEndpoint,
    S3_FORCE_PATH_STYLE: 'true',
    // browserTask nodes run in Chromium here (@sparticuz/chromium's, or CHROMIUM_PATH); in AWS, in the BrowserTask function.
    BROWSER_DRIVER: process.env.BROWSER_DRIVER || 'playwright',
    [RESOURCE_ENV.documentsBucket]: DOCUMENTS_BUCKET,
    [RESOURCE_ENV.processingQueue]: engines.processingQueueUrl,
    [RESOURCE_ENV.flowRunQueue]: engines.flowRunQueueUrl,
    [RESOURCE_ENV.webhookQueue]: engines.webhookQueueUrl,
    POWERTOOLS_LOG_LEVEL: logLevel,
    // People's ID tokens (docs/people.md): the local pool's, when cognito-local runs.
    // Sign-up and members: the local pool, open to anyone, each sign-up confirmed at once (no e-mail goes out).
    ...(cognito
      ? {
          COGNITO_ISSUER: cognito.issuer,
          COGNITO_CLIENT_ID: cognito.clientId,
          COGNITO_USER_POOL_ID: cognito.userPoolId,
          AWS_ENDPOINT_URL_COGNITO_IDENTITY_PROVIDER: cognito.endpoint,
          SIGNUP_MODE: 'open',
          SIGNUP_AUTO_CONFIRM: 'true',
        }
      : {}),
    ...tables,
  });
  // The logger was built when its module loaded, from the process environment: give it the runtime's level.
  logger.setLogLevel(logLevel as Parameters<typeof logger.setLogLevel>[0]);
}

/**
 * DEV_TOKEN set: each token exists, in an organization of its own, with every scope. Unset: on the first start an
 * organization is created and its token printed once; later starts say so (only the hash is stored).
 */
/** ...and answers the first organization: the first DEV_TOKEN's, or the bootstrap one. */
async function bootstrapOrganizations(
  dataDir: string,
  devTokens: string | undefined,
  log: (line: string) => void,
): Promise<string> {
  const now = () => new Date().toISOString();
  if (devTokens) {
    let first: string | undefined;
    for (const token of devTokens
      .split(',')
      .map((t) => t.trim())
      .filter(Boolean)) {
      if (bearerToken(`Bearer ${token}`) !== token) {
        throw new Error('DEV_TOKEN: each token must be 16 to 512 characters of letters, digits and ._~+/=-');
      }
      const existing = await container.tokens.getByHash(hashToken(token));
      if (existing) {
        first ??= existing.organizationId;
        continue;
      }
      const organizationId = randomUUID();
      first ??= organizationId;
      await issueToken(
        container.tokens,
        { organizationId, tokenId: randomUUID(), scopes: SCOPES, name: 'DEV_TOKEN', createdAt: now() },
        token,
      );
      log(`Created organization ${organizationId} for a DEV_TOKEN token`);
    }
    if (first) return first;
  }
  const marker = join(dataDir, 'bootstrap-organization.json');
  if (existsSync(marker)) {
    const { organizationId } = JSON.parse(readFileSync(marker, 'utf8')) as { organizationId: string };
    log(
      `Organization ${organizationId} exists; its token was printed at the first start (set DEV_TOKEN to choose one).`,
    );
    return organizationId;
  }
  const organizationId = randomUUID();
  const token = generateToken();
  const { record } = await issueToken(
    container.tokens,
    { organizationId, tokenId: randomUUID(), scopes: SCOPES, name: 'bootstrap', createdAt: now() },
    token,
  );
  writeFileSync(
    marker,
    JSON.stringify({ organizationId, tokenId: record.tokenId, createdAt: record.createdAt }, null, 2),
  );
  log(`Created organization ${organizationId}. Its token (all scopes), shown only this once:`);
  log(`  ${token}`);
  return organizationId;
}

/**
 * Pollers of the processing queue, each handing batches of LOCAL_PROCESSING_BATCH_SIZE to the handler, as the
 * stack's event source runs several invocations side by side: the records of a batch run at once, so this many
 * documents are processed at once, and the index's group commit writes those that finish together in one commit.
 */
export const LOCAL_PROCESSING_POLLERS = 5;
/** Messages a poller receives at once (SQS's most). */
export const LOCAL_PROCESSING_BATCH_SIZE = 10;
export const LOCAL_PROCESSING_IN_FLIGHT = LOCAL_PROCESSING_POLLERS * LOCAL_PROCESSING_BATCH_SIZE;

/**
 * The processing worker: the embedded index under DATA_DIR/index installed in the processing container, and the
 * queue polled into the same SQS handler the stack deploys.
 */
export async function startProcessing(engines: EngineEndpoints): Promise<QueueWorker> {
  const { handler } = await import('#handlers/queue/process-documents');
  const sqs = new SQSClient({
    endpoint: engines.sqsEndpoint,
    region: LOCAL_REGION,
    credentials: { ...engines.credentials },
  });
  const workers = Array.from({ length: LOCAL_PROCESSING_POLLERS }, () =>
    startQueueWorker({
      sqs,
      queueUrl: engines.processingQueueUrl,
      queueArn: `arn:aws:sqs:${LOCAL_REGION}:000000000000:processing`,
      handler: handler as SqsHandler,
      batchSize: LOCAL_PROCESSING_BATCH_SIZE,
    }),
  );
  const watchdog = await import('#handlers/scheduled/watchdog');
  // Validated like every number the functions read: `abc` is an error at start, not a watchdog every millisecond.
  const intervalSeconds = positiveInteger('WATCHDOG_INTERVAL_SECONDS', 60);
  const timer = setInterval(() => {
    watchdog.handler().catch((error: unknown) => console.error('watchdog failed', error));
  }, intervalSeconds * 1000);
  timer.unref();
  return {
    // Each poller seeing the queue empty once is not enough: another's batch may queue more meanwhile.
    idle: () => queueDrained(sqs, engines.processingQueueUrl),
    stop: async () => {
      clearInterval(timer);
      await Promise.all(workers.map((worker) => worker.stop()));
      sqs.destroy();
    },
  };
}

/**
 * Runs polling the flow runner's queue at once, as the stack's FlowRunner function runs one per invocation with
 * many invocations side by side: a run waits for another only when this many are going on.
 */
export const LOCAL_FLOW_RUNNERS = 4;

/** Pollers of the webhook queue: deliveries to this many endpoints go on at once. */
export const LOCAL_WEBHOOK_POLLERS = 2;

/**
 * The status webhooks' delivery worker (docs/webhooks.md): LOCAL_WEBHOOK_POLLERS queue workers on the webhook queue,
 * handing batches to the same SQS handler the stack deploys. It runs wherever the flow runner runs.
 */
export async function startWebhookDelivery(engines: EngineEndpoints): Promise<QueueWorker> {
  const { handler } = await import('#handlers/queue/deliver-webhooks');
  const sqs = new SQSClient({
    endpoint: engines.sqsEndpoint,
    region: LOCAL_REGION,
    credentials: { ...engines.credentials },
  });
  const workers = Array.from({ length: LOCAL_WEBHOOK_POLLERS }, () =>
    startQueueWorker({
      sqs,
      queueUrl: engines.webhookQueueUrl,
      queueArn: `arn:aws:sqs:${LOCAL_REGION}:000000000000:webhooks`,
      handler: handler as SqsHandler,
      batchSize: 10,
    }),
  );
  return {
    idle: () => queueDrained(sqs, engines.webhookQueueUrl),
    stop: async () => {
      await Promise.all(workers.map((worker) => worker.stop()));
      sqs.destroy();
    },
  };
}

/**
 * The flow runner: LOCAL_FLOW_RUNNERS queue workers (batch size 1, as the stack's event source) on the flow runner's
 * queue, handing each message to the same SQS handler the stack deploys.
 */
export async function startFlowRunner(engines: EngineEndpoints): Promise<QueueWorker> {
  const { handler } = await import('#handlers/queue/flow-runner');
  const { flowContainer } = await import('#composition/flow-container');
  const sqs = new SQSClient({
    endpoint: engines.sqsEndpoint,
    region: LOCAL_REGION,
    credentials: { ...engines.credentials },
  });
  const workers = Array.from({ length: LOCAL_FLOW_RUNNERS }, () =>
    startQueueWorker({
      sqs,
      queueUrl: engines.flowRunQueueUrl,
      queueArn: `arn:aws:sqs:${LOCAL_REGION}:000000000000:flow-runs`,
      handler: handler as SqsHandler,
      batchSize: 1,
    }),
  );
  // The status webhooks are delivered beside the flow runs (the stack's WebhookDelivery function).
  const webhooks = await startWebhookDelivery(engines);
  return {
    // Each poller seeing the queue empty once is not enough: another's batch may queue more meanwhile.
    idle: () => queueDrained(sqs, engines.processingQueueUrl),
    stop: async () => {
      await Promise.all(workers.map((worker) => worker.stop()));
      await webhooks.stop();
      await flowContainer.browser.close();
      sqs.destroy();
    },
  };
}

/** FLOW_RUN_VISIBILITY_TIMEOUT_SECONDS, when set (startEngines checks the range). */
function flowRunVisibilityFromEnv(): number | undefined {
  const raw = process.env.FLOW_RUN_VISIBILITY_TIMEOUT_SECONDS;
  return raw === undefined || raw === '' ? undefined : Number(raw);
}

export interface SeparateWorker {
  /** The engines it works against, as the runtime's engines.json gave them. */
  readonly engines: EnginesFile;
  stop(): Promise<void>;
}

/**
 * The processing worker as a process of its own (`bin/worker.ts`), against the engines of a runtime started with
 * LOCAL_WORKER=off on the same DATA_DIR: the same handler configuration, the same embedded index directory, the
 * same queue worker and watchdog as the runtime's own worker, and the flow runner.
 */
export async function startSeparateWorker(options: { dataDir?: string } = {}): Promise<SeparateWorker> {
  const dataDir = resolve(options.dataDir ?? '.data');
  const embedder = await embedderFromEnv();
  const engines = readEnginesFile(dataDir);
  const release = await acquireWorkerLock(dataDir);
  configureHandlers(engines);
  const index = await LanceKnowledgeIndex.open(join(dataDir, 'index'), { embedder: embedder ?? undefined });
  try {
    useKnowledgeIndex(index, embedder);
    const processing = await startProcessing(engines);
    const flowRunner = await startFlowRunner(engines).catch(async (error: unknown) => {
      await processing.stop();
      throw error;
    });
    return {
      engines,
      stop: async () => {
        await flowRunner.stop();
        await processing.stop();
        await index.close();
        release();
      },
    };
  } catch (error) {
    await index.close();
    release();
    throw error;
  }
}

/**
 * Calls the schedule tick's handler on a timer, one tick at a time, with the given clock (`{ now }`, as a test moves
 * it): the handler the stack deploys, so it sends each due fire to the flow runner's queue as it does in AWS.
 */
async function startScheduler(options: LocalRuntimeOptions): Promise<LocalScheduler & { stop(): Promise<void> }> {
  const { handler } = await import('#handlers/scheduled/schedule-tick');
  const clock = options.scheduleClock ?? { now: () => new Date() };
  let running: Promise<TickOutcome> | undefined;
  const tick = async (): Promise<TickOutcome> => {
    while (running) await running.catch(() => undefined);
    const now = clock.now();
    running = handler({ now: now.toISOString() });
    try {
      const outcome = await running;
      options.onScheduleTick?.(now, outcome);
      return outcome;
    } finally {
      running = undefined;
    }
  };
  const intervalMs = options.scheduleIntervalMs ?? 15_000;
  const timer =
    intervalMs > 0
      ? setInterval(() => {
          tick().catch((error: unknown) => console.error('schedule tick failed', error));
        }, intervalMs)
      : undefined;
  timer?.unref();
  return {
    tick,
    stop: async () => {
      if (timer) clearInterval(timer);
      await running?.catch(() => undefined);
    },
  };
}

export async function startLocalRuntime(options: LocalRuntimeOptions = {}): Promise<LocalRuntime> {
  const host = options.host ?? '127.0.0.1';
  const dataDir = resolve(options.dataDir ?? '.data');
  const log = options.log ?? ((line: string) => console.log(line));
  const embedder = await embedderFromEnv();
  const engineOptions = {
    dataDir,
    host,
    s3Port: options.s3Port ?? 0,
    visibilityTimeoutSeconds: options.visibilityTimeoutSeconds,
    maxUploadBytes: options.maxUploadBytes,
    flowRunVisibilityTimeoutSeconds: options.flowRunVisibilityTimeoutSeconds ?? flowRunVisibilityFromEnv(),
  };
  const engines: Engines =
    options.engines === 'process'
      ? await startEnginesProcess(engineOptions, (code, signal) => {
          log(`The engines process exited (${code ?? signal}): DynamoDB, S3 and SQS are gone`);
          options.onEnginesExit?.(code, signal);
        })
      : await startEngines(engineOptions);
  let releaseWorkerLock: (() => void) | undefined;
  let cognito: LocalCognito | undefined;
  // The pages that may call cognito-local's guard: the console's, at this runtime's address once it listens (below).
  let cognitoOrigins: readonly string[] = [];
  try {
    if (options.cognito) {
      cognito = await startCognito({
        dataDir,
        host,
        ...(options.cognitoPort ? { port: options.cognitoPort } : {}),
        allowedOrigins: () => cognitoOrigins,
        // In AWS Cognito e-mails the code; here it is printed on this console.
        onPasswordResetCode: (email, code) => log(`Password reset code for ${email}: ${code}`),
      });
      // In AWS Cognito e-mails an invitation; here the person's temporary password is printed on this console.
      printInvitationsWith(
        ({ email, temporaryPassword }) =>
          log(
            `Invitation for ${email}: temporary password ${temporaryPassword} (a new one is chosen at first sign-in)`,
          ),
        ({ email, organizationName, organizationId, role }) =>
          log(`Invitation for ${email} to ${organizationName ?? organizationId} as ${role}: accepted after sign-in`),
      );
    } else if (options.devUser) {
      throw new Error('DEV_USER needs cognito-local: unset COGNITO=off');
    }
    configureHandlers(engines, cognito);
    const organizationId = await bootstrapOrganizations(dataDir, options.devTokens, log);
    if (cognito && options.devUser) {
      const userName = await ensureDevUser(cognito, options.devUser);
      const email = userName.toLowerCase();
      // An owner of the first organization, unless the person is in it already (as whatever they are there).
      // cognito-local compares user names as they are written (the stack's pool does not).
      const sub = await membersContainer.directory.lookup(userName);
      if (!sub) throw new Error(`DEV_USER ${email} is not in the user pool after it was made`);
      const membership = { sub, organizationId, email, role: 'owner' as const, createdAt: new Date().toISOString() };
      const created = await membersContainer.memberships.create(membership);
      const role = created ? 'owner' : (await membersContainer.memberships.get(sub, organizationId))?.role;
      log(`DEV_USER ${userName} can sign in: ${role} of ${organizationId}`);
    }
    // The embedded index serves retrieval in this process and processing wherever the worker runs.
    const index = await LanceKnowledgeIndex.open(join(dataDir, 'index'), { embedder: embedder ?? undefined });
    useKnowledgeIndex(index, embedder);
    // LOCAL_WORKER=off leaves both queues to a separate worker (bin/worker.ts); `process` starts one below.
    const inProcess = options.worker === undefined || options.worker === true;
    if (inProcess) releaseWorkerLock = await acquireWorkerLock(dataDir);
    let worker = inProcess ? await startProcessing(engines) : undefined;
    const flowRunner = inProcess ? await startFlowRunner(engines) : undefined;
    const scheduler = await startScheduler(options);
    const ttlSweep = startTtlSweep(engines, { intervalSeconds: ttlSweepIntervalFromEnv() });
    // The metrics the handlers report, kept for GET /dashboard/metrics (the separate worker's stay in its process).
    const collector = new MetricsCollector();
    reportMetricsAlsoTo(collector);
    // The tests' check of every answer against the OpenAPI document (lib/local/openapi-check.ts): imported only when
    // asked for, so `npm start` neither loads ajv nor builds the document.
    const checkDir = process.env.OPENAPI_CHECK_DIR;
    const recorder = checkDir ? (await import('./openapi-check')).createAnswerRecorder(checkDir) : undefined;
    const observe = recorder
      ? (answer: Answer) => {
          recorder.record(answer);
        }
      : undefined;
    const router = createRouter(ROOT, ROUTES, {
      metrics: { namespace: handlerVariable('POWERTOOLS_METRICS_NAMESPACE') ?? LOCAL_METRICS_NAMESPACE, collector },
      clientLimits: clientLimitsFromEnv(),
      observe,
    });
    // The web console at `/` (web/dist, when built) and its /config.json: this runtime's Cognito, open to sign-up.
    // Its CSP lets the page reach cognito-local and the S3 endpoint its upload URLs point at.
    const web = consoleHandler(
      {
        apiUrl: '',
        cognito: cognito
          ? { region: 'local', endpoint: cognito.endpoint, userPoolId: cognito.userPoolId, clientId: cognito.clientId }
          : null,
        signUp: cognito ? 'open' : 'invite',
      },
      { uploads: engines.s3Endpoint },
    );
    const server = createServer((request, response) => {
      if (web(request, response)) return;
      router.handle(request, response).catch((error: unknown) => {
        console.error('local router failed', error);
        if (!response.headersSent) response.writeHead(500);
        response.end();
      });
    });
    // Longer than clients' idle keep-alive, so the server never closes a socket a client is about to reuse (a
    // busy event loop, e.g. the first PDF, would otherwise turn that race into ECONNRESET).
    server.keepAliveTimeout = 65_000;
    server.headersTimeout = 66_000;
    server.on('clientError', (error: Error, socket: Duplex) => answerClientError(error, socket, observe));
    await new Promise<void>((resolveListen, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 4000, host, () => resolveListen());
    });
    const { port } = server.address() as AddressInfo;
    const cors = corsPolicyFromEnv();
    cognitoOrigins = consoleOrigins(host, port, cors.kind === 'listed' ? cors.origins : []);
    writeEnginesFile(dataDir, engines);
    if (options.worker === 'process') {
      worker = await startWorkerProcess({ dataDir, engines, metrics: collector, log }).catch(async (error: unknown) => {
        await scheduler.stop();
        ttlSweep.stop();
        reportMetricsAlsoTo(undefined);
        await new Promise<void>((done) => server.close(() => done()));
        await index.close();
        removeEnginesFile(dataDir);
        throw error;
      });
    }
    return {
      url: `http://${host}:${port}`,
      engines,
      cognito,
      worker,
      scheduler,
      stop: async () => {
        await scheduler.stop();
        ttlSweep.stop();
        reportMetricsAlsoTo(undefined);
        await new Promise<void>((done) => {
          server.close(() => done());
          server.closeAllConnections();
        });
        await worker?.stop();
        await flowRunner?.stop();
        // A browser this process's own requests started (the in-process flow runner closed its own just above).
        await (await import('#composition/flow-container')).flowContainer.browser.close();
        await index.close();
        releaseWorkerLock?.();
        removeEnginesFile(dataDir);
        await cognito?.stop();
        await engines.stop();
      },
    };
  } catch (error) {
    releaseWorkerLock?.();
    await cognito?.stop();
    await engines.stop();
    throw error;
  }
}
