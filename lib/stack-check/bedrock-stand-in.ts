/**
 * A local stand-in for the Amazon Bedrock APIs the deployed stack calls (the knowledge base document APIs of
 * bedrock-agent, Retrieve of bedrock-agent-runtime, Converse of bedrock-runtime), speaking their REST-JSON wire
 * protocol so the project's real adapters, with the real SDK clients pointed at it by `endpoint`, run against it.
 * Every request is checked against the documented constraints of bedrock-constraints.ts; a breach is recorded in
 * `violations` and answered as Bedrock would, with a 400 ValidationException.
 *
 * Stand-in limitations: Retrieve ranks by a lexical score (the share of the query's distinct words a document
 * contains), not by embeddings, so it finds no synonyms and its scores are not Bedrock's; like a nearest-neighbour
 * search it returns the best documents that pass the filter whatever their score, zero included. Documents are never
 * chunked (the adapter's data sources use chunking strategy NONE). Converse answers a scripted text or echoes the last
 * user text, counting words as tokens.
 */
import { randomUUID } from 'node:crypto';
import { createServer as createHttp1Server, type IncomingHttpHeaders } from 'node:http';
import { createServer as createHttp2Server } from 'node:http2';
import { type AddressInfo, createServer as createNetServer, type Server, type Socket } from 'node:net';
import type { Readable } from 'node:stream';
import {
  type BedrockOperation,
  checkRequest,
  FILTER_ATTRIBUTE_OPERATORS,
  type Finding,
  knowledgeBaseIdOf,
} from './bedrock-constraints';

/** A request member that breaks a documented constraint (or a stand-in limit, whose `source` says so). */
export type Violation = Finding;

export interface RecordedRequest {
  /** Undefined when no route matched. */
  readonly operation: BedrockOperation | undefined;
  readonly method: string;
  readonly path: string;
  readonly status: number;
  /** The path labels and the JSON body as one object, when the body was JSON. */
  readonly input?: Readonly<Record<string, unknown>>;
  readonly violations: readonly Violation[];
}

export interface ConverseInput {
  readonly modelId: string;
  readonly messages?: readonly { role?: string; content?: readonly Record<string, unknown>[] }[];
  readonly system?: readonly Record<string, unknown>[];
  readonly inferenceConfig?: { maxTokens?: number };
}

export interface BedrockStandInOptions {
  /**
   * The knowledge bases and, for each, its data source ids. Absent: any id of the documented pattern exists, and its
   * state is created on first use.
   */
  readonly knowledgeBases?: Readonly<Record<string, readonly string[]>>;
  /** How many Get/List observations report an ingested document as STARTING before it is INDEXED (default 0). */
  readonly indexingObservations?: number;
  /**
   * Asked at each ingest of a document (by its id): true makes its indexing end FAILED, as Bedrock reports a document
   * whose embedding or vector write failed (a throttled embedding model, for one). Default: none fails.
   */
  readonly failIndexing?: (documentId: string) => boolean;
  /** A deleted document is reported DELETING by one Get/List observation before it disappears (default false). */
  readonly reportDeletingOnce?: boolean;
  /** Converse's answer; default: the text of the last user message. */
  readonly converseAnswer?: string | ((request: ConverseInput) => string);
  /**
   * 'refuse' (default) answers a request that breaks a constraint with a 400 ValidationException, as Bedrock does;
   * 'record' records the violations and serves the request anyway, to see every violation of a whole flow.
   */
  readonly onViolation?: 'refuse' | 'record';
  /** Request bodies above this many bytes are refused with 413 (default 10 MiB). */
  readonly maxBodyBytes?: number;
  /**
   * Asks whether a caller may make a request, before its constraints are checked (as AWS authorizes first): a
   * request to `<endpoint>/caller/<name>/…` is the request `/…` of caller `name`; a reason answered refuses it with
   * 403 AccessDeniedException. The stack-check gives each function its own endpoint prefix and checks its role here.
   */
  readonly authorize?: (request: BedrockCall) => Promise<string | undefined>;
  /**
   * Asks whether to throttle a request (after it is authorized, before its constraints are checked): true answers it
   * 429 ThrottlingException, as Bedrock does past a quota, and changes nothing.
   */
  readonly throttle?: (request: BedrockCall) => boolean;
}

/** A document put straight into a data source by `seed`, as if ingested and indexed long ago. */
export interface SeededDocument {
  readonly id: string;
  readonly text: string;
  /** Its MetadataAttributes, as an ingest would carry them (default: none). */
  readonly attributes?: readonly Record<string, unknown>[];
}

/** A request as its authorizer sees it: who sent it (the `caller` path prefix), the operation and its input. */
export interface BedrockCall {
  readonly caller: string | undefined;
  readonly operation: BedrockOperation;
  /** The path labels and the JSON body as one object. */
  readonly input: Readonly<Record<string, unknown>>;
}

export interface BedrockStandIn {
  /** `http://127.0.0.1:<port>`: the `endpoint` of all three SDK clients. */
  readonly endpoint: string;
  readonly violations: Violation[];
  readonly requests: RecordedRequest[];
  /**
   * Puts documents INDEXED into a data source without a request (none is recorded): a data source of 100,000
   * documents in a fraction of a second, for tests of how calls grow with it.
   */
  seed(knowledgeBaseId: string, dataSourceId: string, documents: Iterable<SeededDocument>): void;
  /** How many documents a data source holds now (any status). */
  documentCount(knowledgeBaseId: string, dataSourceId: string): number;
  stop(): Promise<void>;
}

const DEFAULT_MAX_BODY_BYTES = 10 * 1024 * 1024;

/** What Retrieve returns without numberOfResults: "up to five results in the response by default" (User Guide). */
const DEFAULT_NUMBER_OF_RESULTS = 5;

/** ListKnowledgeBaseDocuments' page size without maxResults: not documented; the stand-in uses the maximum. */
const DEFAULT_LIST_PAGE_SIZE = 1000;

/** The stand-in's data sources are all custom data sources (the only kind the adapter ingests into inline). */
const DATA_SOURCE_TYPE = 'CUSTOM';

/** A filter deeper than this is refused before evaluation (a stand-in limit, against unbounded recursion). */
const MAX_FILTER_DEPTH = 64;

const STAND_IN_LIMIT = 'bedrock-stand-in limit (not a documented Bedrock constraint)';

/** The protocol of all three services: a request's body members travel as one JSON object. */
const REST_JSON = 'https://smithy.io/2.0/aws/protocols/aws-restjson1-protocol.html';

const HTTP2_PREFACE = Buffer.from('PRI * HTTP/2.0');

export async function startBedrockStandIn(options: BedrockStandInOptions = {}): Promise<BedrockStandIn> {
  const service = new StandInService(options);
  const transport = new DualProtocolServer((request, response, http2) => service.handle(request, response, http2));
  const port = await transport.listen();
  return {
    endpoint: `http://127.0.0.1:${port}`,
    violations: service.violations,
    requests: service.requests,
    seed: (knowledgeBaseId, dataSourceId, documents) => service.seed(knowledgeBaseId, dataSourceId, documents),
    documentCount: (knowledgeBaseId, dataSourceId) => service.dataSource(knowledgeBaseId, dataSourceId).documents.size,
    stop: () => transport.close(),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Transport: one port for HTTP/1.1 (the bedrock-agent client) and cleartext HTTP/2 (the bedrock-agent-runtime and
// bedrock-runtime clients default to NodeHttp2Handler, which speaks h2 with prior knowledge to an http:// endpoint).

type IncomingRequest = Readable & {
  readonly method?: string;
  readonly url?: string;
  readonly headers: IncomingHttpHeaders;
};

interface OutgoingResponse {
  writeHead(status: number, headers: Record<string, string>): unknown;
  end(body: string): unknown;
}

type Handler = (request: IncomingRequest, response: OutgoingResponse, http2: boolean) => Promise<void>;

class DualProtocolServer {
  private readonly front: Server;
  private readonly sockets = new Set<Socket>();

  constructor(handler: Handler) {
    // The handler answers every request itself; a failure here means the connection broke while it did.
    const serve = (request: IncomingRequest, response: OutgoingResponse, http2: boolean) =>
      handler(request, response, http2).catch(() => request.destroy());
    const http1 = createHttp1Server((request, response) => void serve(request, response, false));
    const http2 = createHttp2Server();
    http2.on('request', (request, response) => void serve(request, response, true));
    // A connection goes to the HTTP/2 server when it opens with the HTTP/2 preface, to the HTTP/1.1 server otherwise;
    // the bytes read to decide are put back before either server reads.
    this.front = createNetServer((socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
      socket.once('data', (chunk: Buffer) => {
        socket.pause();
        socket.unshift(chunk);
        const prefix = chunk.subarray(0, HTTP2_PREFACE.length);
        (HTTP2_PREFACE.subarray(0, prefix.length).equals(prefix) ? http2 : http1).emit('connection', socket);
        process.nextTick(() => socket.resume());
      });
    });
  }

  listen(): Promise<number> {
    return new Promise((resolve, reject) => {
      this.front.once('error', reject);
      this.front.listen(0, '127.0.0.1', () => resolve((this.front.address() as AddressInfo).port));
    });
  }

  /** Stops listening and ends the connections the SDK clients keep alive. */
  close(): Promise<void> {
    return new Promise((resolve) => {
      this.front.close(() => resolve());
      for (const socket of this.sockets) socket.destroy();
    });
  }
}

/** The body, or 'too-large' as soon as it passes `limit` (the rest is drained, not kept). */
function readBody(request: IncomingRequest, limit: number): Promise<Buffer | 'too-large'> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) {
        chunks.push(chunk);
        return;
      }
      request.off('data', onData);
      request.resume();
      resolve('too-large');
    };
    request.on('data', onData);
    request.once('end', () => resolve(Buffer.concat(chunks)));
    request.once('error', reject);
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Errors and routes

/** An error answered in the REST-JSON shape: status, `x-amzn-errortype` header and `{ message }` body. */
class ServiceError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
    readonly fields?: readonly { name: string; message: string }[],
  ) {
    super(message);
  }
}

interface Route {
  readonly operation: BedrockOperation;
  readonly labels: Readonly<Record<string, string>>;
}

function decodeSegments(pathname: string): string[] | undefined {
  try {
    return pathname.split('/').slice(1).map(decodeURIComponent);
  } catch {
    return undefined;
  }
}

/** The operation of a method and path, with its path labels (the routes of the API reference's request syntax). */
function routeOf(method: string, pathname: string): Route | undefined {
  const s = decodeSegments(pathname);
  if (!s) return undefined;
  if (s.length === 3 && s[0] === 'model' && s[2] === 'converse' && method === 'POST') {
    return { operation: 'Converse', labels: { modelId: s[1] } };
  }
  if (s[0] !== 'knowledgebases') return undefined;
  if (s.length === 3 && s[2] === 'retrieve' && method === 'POST') {
    return { operation: 'Retrieve', labels: { knowledgeBaseId: s[1] } };
  }
  if (s.length < 5 || s.length > 6 || s[2] !== 'datasources' || s[4] !== 'documents') return undefined;
  const labels = { knowledgeBaseId: s[1], dataSourceId: s[3] };
  const action = `${method} ${s[5] ?? ''}`;
  const operation = (
    {
      'PUT ': 'IngestKnowledgeBaseDocuments',
      'POST ': 'ListKnowledgeBaseDocuments',
      'POST deleteDocuments': 'DeleteKnowledgeBaseDocuments',
      'POST getDocuments': 'GetKnowledgeBaseDocuments',
    } as Record<string, BedrockOperation>
  )[action];
  return operation ? { operation, labels } : undefined;
}

function validationMessage(findings: readonly Finding[]): string {
  const each = findings
    .slice(0, 10)
    .map((f) => `Value at '${f.member}' failed to satisfy constraint: ${f.rule} (got ${f.detail})`);
  const more = findings.length > 10 ? `; and ${findings.length - 10} more` : '';
  return `${findings.length} validation error${findings.length === 1 ? '' : 's'} detected: ${each.join('; ')}${more}`;
}

// ---------------------------------------------------------------------------------------------------------------
// State

type DocumentStatus = 'STARTING' | 'INDEXED' | 'FAILED' | 'DELETING';

interface StoredDocument {
  readonly id: string;
  readonly text: string;
  /** The MetadataAttributes as ingested. */
  readonly attributes: readonly Record<string, unknown>[];
  status: DocumentStatus;
  updatedAt: Date;
  /** Observations still to report STARTING. */
  pendingObservations: number;
  /** Its indexing ends FAILED instead of INDEXED. */
  readonly fails?: boolean;
}

/** A data source's documents, with their ids in order kept between changes (a list of 100,000 sorts once). */
class Documents extends Map<string, StoredDocument> {
  private sorted: string[] | undefined;

  override set(id: string, document: StoredDocument): this {
    if (!this.has(id)) this.sorted = undefined;
    return super.set(id, document);
  }

  override delete(id: string): boolean {
    const deleted = super.delete(id);
    if (deleted) this.sorted = undefined;
    return deleted;
  }

  /** The ids after `after`, in order. */
  idsAfter(after: string): string[] {
    this.sorted ??= [...this.keys()].sort();
    const ids = this.sorted;
    let low = 0;
    let high = ids.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (ids[middle] > after) high = middle;
      else low = middle + 1;
    }
    return ids.slice(low);
  }
}

interface DataSource {
  readonly knowledgeBaseId: string;
  readonly dataSourceId: string;
  readonly documents: Documents;
  /** The answers given to each clientToken of this data source, by operation and token. */
  readonly answered: Map<string, unknown>;
}

const ID_PATTERN = /^[0-9a-zA-Z]{10}$/;

/** The knowledge bases and their custom data sources: declared up front, or made on first use. */
class KnowledgeBases {
  private readonly byId = new Map<string, Map<string, DataSource>>();

  constructor(private readonly declared: Readonly<Record<string, readonly string[]>> | undefined) {
    for (const [knowledgeBaseId, dataSourceIds] of Object.entries(declared ?? {})) {
      for (const dataSourceId of dataSourceIds) this.create(knowledgeBaseId, dataSourceId);
    }
  }

  dataSource(knowledgeBaseId: string, dataSourceId: string): DataSource {
    const existing = this.byId.get(knowledgeBaseId)?.get(dataSourceId);
    if (existing) return existing;
    if (this.declared || !ID_PATTERN.test(knowledgeBaseId) || !ID_PATTERN.test(dataSourceId)) {
      throw this.byId.has(knowledgeBaseId)
        ? notFound(`Data source ${dataSourceId} of knowledge base ${knowledgeBaseId} does not exist`)
        : notFound(`Knowledge base ${knowledgeBaseId} does not exist`);
    }
    return this.create(knowledgeBaseId, dataSourceId);
  }

  /** The data sources of a knowledge base (an undeclared one of the documented pattern exists, with none yet). */
  dataSourcesOf(knowledgeBaseId: string): DataSource[] {
    const sources = this.byId.get(knowledgeBaseId);
    if (sources) return [...sources.values()];
    if (this.declared || !ID_PATTERN.test(knowledgeBaseId)) {
      throw notFound(`Knowledge base ${knowledgeBaseId} does not exist`);
    }
    return [];
  }

  private create(knowledgeBaseId: string, dataSourceId: string): DataSource {
    let sources = this.byId.get(knowledgeBaseId);
    if (!sources) {
      sources = new Map();
      this.byId.set(knowledgeBaseId, sources);
    }
    const source = { knowledgeBaseId, dataSourceId, documents: new Documents(), answered: new Map() };
    sources.set(dataSourceId, source);
    return source;
  }
}

function notFound(message: string): ServiceError {
  return new ServiceError(404, 'ResourceNotFoundException', message);
}

// ---------------------------------------------------------------------------------------------------------------
// The service

type Json = Record<string, unknown>;

interface Answer {
  readonly status: number;
  readonly body: unknown;
  /** Default: the JSON content type and a request id. */
  readonly headers?: Record<string, string>;
}

const asObject = (value: unknown): Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : {};
const asList = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
const asString = (value: unknown): string => (typeof value === 'string' ? value : '');

class StandInService {
  readonly violations: Violation[] = [];
  readonly requests: RecordedRequest[] = [];
  private readonly knowledgeBases: KnowledgeBases;
  private lastTime = 0;

  constructor(private readonly options: BedrockStandInOptions) {
    this.knowledgeBases = new KnowledgeBases(options.knowledgeBases);
  }

  async handle(request: IncomingRequest, response: OutgoingResponse, http2: boolean): Promise<void> {
    const method = request.method ?? 'GET';
    const url = new URL(request.url ?? '/', 'http://stand-in').pathname;
    const prefixed = /^\/caller\/([^/]+)(\/.*)$/.exec(url);
    const caller = prefixed ? decodeURIComponent(prefixed[1]) : undefined;
    const path = prefixed ? prefixed[2] : url;
    const route = routeOf(method, path);
    const found: Violation[] = [];
    let input: Json | undefined;
    let answer: Answer;
    try {
      if (!route) throw new ServiceError(404, 'UnknownOperationException', `No Bedrock operation at ${method} ${path}`);
      input = await this.inputOf(request, route, found);
      const denied = await this.options.authorize?.({ caller, operation: route.operation, input });
      if (denied !== undefined) throw new ServiceError(403, 'AccessDeniedException', denied);
      if (this.options.throttle?.({ caller, operation: route.operation, input })) {
        throw new ServiceError(429, 'ThrottlingException', 'Rate exceeded');
      }
      answer = this.serve(route.operation, input, found);
    } catch (error) {
      answer = errorAnswer(error, http2);
    }
    this.violations.push(...found);
    this.requests.push({ operation: route?.operation, method, path, status: answer.status, input, violations: found });
    response.writeHead(answer.status, answer.headers ?? requestIdHeaders());
    response.end(JSON.stringify(answer.body));
  }

  /** The path labels and the JSON body as one object, the shape the constraints describe. */
  private async inputOf(request: IncomingRequest, route: Route, found: Violation[]): Promise<Json> {
    const limit = this.options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
    const body = await readBody(request, limit);
    if (body === 'too-large') {
      found.push(bodyViolation(route.operation, `body ≤ ${limit} bytes`, 'larger', STAND_IN_LIMIT));
      throw new ServiceError(413, 'ValidationException', `The request body is larger than ${limit} bytes`);
    }
    let parsed: unknown = {};
    try {
      if (body.length > 0) parsed = JSON.parse(body.toString('utf8'));
    } catch {
      found.push(bodyViolation(route.operation, 'a JSON object', 'not JSON', REST_JSON));
      throw new ServiceError(400, 'SerializationException', 'The request body is not JSON');
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      found.push(bodyViolation(route.operation, 'a JSON object', typeof parsed, REST_JSON));
      throw new ServiceError(400, 'SerializationException', 'The request body is not a JSON object');
    }
    return { ...(parsed as Json), ...route.labels };
  }

  private serve(operation: BedrockOperation, input: Json, found: Violation[]): Answer {
    if (operation === 'Retrieve') assertFilterDepth(input, found);
    const findings = checkRequest(operation, input, { dataSourceType: DATA_SOURCE_TYPE });
    found.push(...findings);
    if (findings.length > 0 && (this.options.onViolation ?? 'refuse') === 'refuse') {
      throw new ServiceError(
        400,
        'ValidationException',
        validationMessage(findings),
        findings.map((f) => ({ name: f.member, message: `${f.rule} (got ${f.detail})` })),
      );
    }
    switch (operation) {
      case 'IngestKnowledgeBaseDocuments':
        return this.ingest(input);
      case 'DeleteKnowledgeBaseDocuments':
        return this.delete(input);
      case 'GetKnowledgeBaseDocuments':
        return this.get(input);
      case 'ListKnowledgeBaseDocuments':
        return this.list(input);
      case 'Retrieve':
        return this.retrieve(input);
      case 'Converse':
        return this.converse(input);
    }
  }

  dataSource(knowledgeBaseId: string, dataSourceId: string): DataSource {
    return this.knowledgeBases.dataSource(knowledgeBaseId, dataSourceId);
  }

  seed(knowledgeBaseId: string, dataSourceId: string, documents: Iterable<SeededDocument>): void {
    const source = this.dataSource(knowledgeBaseId, dataSourceId);
    const updatedAt = this.now();
    for (const { id, text, attributes = [] } of documents) {
      source.documents.set(id, { id, text, attributes, status: 'INDEXED', updatedAt, pendingObservations: 0 });
    }
  }

  /** A strictly increasing clock, so two updates never share an updatedAt. */
  private now(): Date {
    this.lastTime = Math.max(Date.now(), this.lastTime + 1);
    return new Date(this.lastTime);
  }

  // -- knowledge base documents --------------------------------------------------------------------------------

  /**
   * A repeated clientToken is ignored and answered as before ("If this token matches a previous request, Amazon
   * Bedrock ignores the request, but does not return an error"); tokens are kept per data source and operation.
   */
  private idempotent(source: DataSource, operation: string, token: unknown, run: () => unknown): unknown {
    if (typeof token !== 'string') return run();
    const key = `${operation} ${token}`;
    if (source.answered.has(key)) return source.answered.get(key);
    const body = run();
    source.answered.set(key, body);
    return body;
  }

  private ingest(input: Json): Answer {
    const source = this.knowledgeBases.dataSource(asString(input.knowledgeBaseId), asString(input.dataSourceId));
    const body = this.idempotent(source, 'ingest', input.clientToken, () => {
      const details = asList(input.documents).map((document) => {
        const stored = this.store(source, asObject(document));
        return detailOf(source, stored.id, 'STARTING', stored.updatedAt);
      });
      return { documentDetails: details };
    });
    return { status: 202, body };
  }

  /** Ingesting an id that exists replaces its content and metadata, as Bedrock does. */
  private store(source: DataSource, document: Json): StoredDocument {
    const custom = asObject(asObject(document.content).custom);
    const id = asString(asObject(custom.customDocumentIdentifier).id);
    const pending = this.options.indexingObservations ?? 0;
    const fails = this.options.failIndexing?.(id) ?? false;
    const stored: StoredDocument = {
      id,
      text: asString(asObject(asObject(custom.inlineContent).textContent).data),
      attributes: asList(asObject(document.metadata).inlineAttributes).map(asObject),
      status: pending > 0 ? 'STARTING' : fails ? 'FAILED' : 'INDEXED',
      updatedAt: this.now(),
      pendingObservations: pending,
      fails,
    };
    source.documents.set(id, stored);
    return stored;
  }

  private delete(input: Json): Answer {
    const source = this.knowledgeBases.dataSource(asString(input.knowledgeBaseId), asString(input.dataSourceId));
    const body = this.idempotent(source, 'delete', input.clientToken, () => {
      const details = asList(input.documentIdentifiers).map((identifier) => {
        const id = asString(asObject(asObject(identifier).custom).id);
        const stored = source.documents.get(id);
        if (stored && this.options.reportDeletingOnce) {
          stored.status = 'DELETING';
          stored.updatedAt = this.now();
        } else {
          source.documents.delete(id);
        }
        return { ...detailOf(source, id, 'DELETING'), identifier };
      });
      return { documentDetails: details };
    });
    return { status: 202, body };
  }

  private get(input: Json): Answer {
    const source = this.knowledgeBases.dataSource(asString(input.knowledgeBaseId), asString(input.dataSourceId));
    const details = asList(input.documentIdentifiers).map((identifier) => {
      const id = asString(asObject(asObject(identifier).custom).id);
      const stored = source.documents.get(id);
      return stored ? this.observe(source, stored) : { ...detailOf(source, id, 'NOT_FOUND'), identifier };
    });
    return { status: 200, body: { documentDetails: details } };
  }

  /** Pages in id order; the nextToken is the last id of the page, so a deletion between pages skips nothing. */
  private list(input: Json): Answer {
    const source = this.knowledgeBases.dataSource(asString(input.knowledgeBaseId), asString(input.dataSourceId));
    const after = typeof input.nextToken === 'string' ? decodeListToken(input.nextToken) : '';
    // Clamped, so a maxResults that validation refused still pages sensibly when violations are only recorded.
    const requested = typeof input.maxResults === 'number' ? input.maxResults : DEFAULT_LIST_PAGE_SIZE;
    const size = Math.max(1, Math.floor(requested));
    const ids = source.documents.idsAfter(after);
    const page = ids.slice(0, size);
    const details = page.map((id) => this.observe(source, source.documents.get(id) as StoredDocument));
    const nextToken = ids.length > size ? Buffer.from(page[page.length - 1], 'utf8').toString('base64url') : undefined;
    return { status: 200, body: { documentDetails: details, ...(nextToken ? { nextToken } : {}) } };
  }

  /** One Get/List observation: counts down the indexing delay, and ends a reported deletion. */
  private observe(source: DataSource, stored: StoredDocument): Json {
    const detail = detailOf(source, stored.id, stored.status, stored.updatedAt);
    if (stored.status === 'DELETING') source.documents.delete(stored.id);
    if (stored.status === 'STARTING' && --stored.pendingObservations <= 0) {
      stored.status = stored.fails ? 'FAILED' : 'INDEXED';
      stored.updatedAt = this.now();
    }
    return detail;
  }

  // -- Retrieve ------------------------------------------------------------------------------------------------

  private retrieve(input: Json): Answer {
    const knowledgeBaseId = knowledgeBaseIdOf(asString(input.knowledgeBaseId));
    const sources = this.knowledgeBases.dataSourcesOf(knowledgeBaseId);
    const vector = asObject(asObject(input.retrievalConfiguration).vectorSearchConfiguration);
    const filter = vector.filter === undefined ? undefined : asObject(vector.filter);
    const count = typeof vector.numberOfResults === 'number' ? vector.numberOfResults : DEFAULT_NUMBER_OF_RESULTS;
    const queryTerms = termsOf(asString(asObject(input.retrievalQuery).text));
    const results = sources
      .flatMap((source) => [...source.documents.values()].map((stored) => ({ source, stored })))
      .filter(({ stored }) => stored.status === 'INDEXED')
      .map(({ source, stored }) => ({ source, stored, metadata: metadataOf(source, stored) }))
      .filter(({ metadata }) => filter === undefined || matchesFilter(filter, metadata))
      .map((hit) => ({ ...hit, score: lexicalScore(queryTerms, hit.stored.text) }))
      .sort((a, b) => b.score - a.score || (a.stored.id < b.stored.id ? -1 : 1))
      .slice(0, Math.max(0, count));
    return {
      status: 200,
      body: {
        retrievalResults: results.map(({ stored, metadata, score }) => ({
          content: { type: 'TEXT', text: stored.text },
          location: { type: 'CUSTOM', customDocumentLocation: { id: stored.id } },
          metadata,
          score,
        })),
      },
    };
  }

  // -- Converse ------------------------------------------------------------------------------------------------

  private converse(input: Json): Answer {
    const started = Date.now();
    const request = input as unknown as ConverseInput;
    const scripted = this.options.converseAnswer;
    const full = typeof scripted === 'function' ? scripted(request) : (scripted ?? lastUserText(request));
    const words = wordsOf(full);
    const maxTokens = request.inferenceConfig?.maxTokens;
    const truncated = typeof maxTokens === 'number' && words.length > maxTokens;
    const text = truncated ? words.slice(0, maxTokens).join(' ') : full;
    const inputTokens = wordsOf(allTextOf(request)).length;
    const outputTokens = truncated ? maxTokens : words.length;
    return {
      status: 200,
      body: {
        output: { message: { role: 'assistant', content: [{ text }] } },
        stopReason: truncated ? 'max_tokens' : 'end_turn',
        usage: { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens },
        metrics: { latencyMs: Date.now() - started },
      },
    };
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Helpers of the service

function requestIdHeaders(): Record<string, string> {
  return { 'content-type': 'application/json', 'x-amzn-requestid': randomUUID() };
}

/** The REST-JSON error shape: the SDK picks the error class by the `x-amzn-errortype` header. */
function errorHeaders(type: string): Record<string, string> {
  return { ...requestIdHeaders(), 'x-amzn-errortype': type };
}

/** A ServiceError as its REST-JSON answer; anything else is the stand-in's own failure, a 500. */
function errorAnswer(error: unknown, http2: boolean): Answer {
  if (!(error instanceof ServiceError)) {
    return { status: 500, body: { message: 'The stand-in failed' }, headers: errorHeaders('InternalServerException') };
  }
  const headers = errorHeaders(error.type);
  // An HTTP/1.1 client may still be sending an oversized body: the connection is not reused.
  if (error.status === 413 && !http2) headers.connection = 'close';
  return {
    status: error.status,
    body: { message: error.message, ...(error.fields ? { fieldList: error.fields } : {}) },
    headers,
  };
}

function bodyViolation(operation: BedrockOperation, rule: string, detail: string, source: string): Violation {
  return { operation, member: '(body)', rule, detail, source };
}

function detailOf(source: DataSource, id: string, status: string, updatedAt?: Date): Json {
  return {
    knowledgeBaseId: source.knowledgeBaseId,
    dataSourceId: source.dataSourceId,
    identifier: { dataSourceType: DATA_SOURCE_TYPE, custom: { id } },
    status,
    ...(updatedAt ? { updatedAt: updatedAt.toISOString() } : {}),
  };
}

function decodeListToken(token: string): string {
  const id = Buffer.from(token, 'base64url').toString('utf8');
  if (Buffer.from(id, 'utf8').toString('base64url') !== token) {
    throw new ServiceError(400, 'ValidationException', 'The nextToken is not one this data source returned');
  }
  return id;
}

/** A MetadataAttributeValue as Retrieve returns it: the JSON value of the member its type selects. */
function attributeValue(value: Json): unknown {
  switch (value.type) {
    case 'NUMBER':
      return value.numberValue;
    case 'BOOLEAN':
      return value.booleanValue;
    case 'STRING_LIST':
      return value.stringListValue;
    default:
      return value.stringValue;
  }
}

/**
 * The result metadata: the document's attributes, and two fields of Bedrock's own (their names follow what Bedrock
 * returns for custom documents but are not stated in the API reference; they show the adapter ignores extra keys).
 */
function metadataOf(source: DataSource, stored: StoredDocument): Json {
  // No prototype: an attribute key is request input, and `__proto__` must stay an ordinary key.
  const metadata: Json = Object.create(null);
  for (const attribute of stored.attributes) {
    metadata[asString(attribute.key)] = attributeValue(asObject(attribute.value));
  }
  metadata['x-amz-bedrock-kb-data-source-id'] = source.dataSourceId;
  metadata['x-amz-bedrock-kb-chunk-id'] = `${source.dataSourceId}:${stored.id}`;
  return metadata;
}

/**
 * Refuses a filter nested deeper than MAX_FILTER_DEPTH before anything walks it recursively (a stand-in limit, so
 * that a hostile body cannot exhaust the stack).
 */
function assertFilterDepth(input: Json, found: Violation[]): void {
  const filter = asObject(asObject(input.retrievalConfiguration).vectorSearchConfiguration).filter;
  if (filter === undefined || depthOf(asObject(filter)) <= MAX_FILTER_DEPTH) return;
  found.push({
    operation: 'Retrieve',
    member: 'retrievalConfiguration.vectorSearchConfiguration.filter',
    rule: `nesting ≤ ${MAX_FILTER_DEPTH}`,
    detail: 'deeper',
    source: STAND_IN_LIMIT,
  });
  throw new ServiceError(400, 'ValidationException', `The filter is nested deeper than ${MAX_FILTER_DEPTH} levels`);
}

function depthOf(filter: Json): number {
  let deepest = 1;
  let level: unknown[] = [filter];
  while (level.length > 0 && deepest <= MAX_FILTER_DEPTH) {
    const next = level.flatMap((node) => [...asList(asObject(node).andAll), ...asList(asObject(node).orAll)]);
    if (next.length > 0) deepest++;
    level = next;
  }
  return deepest;
}

/**
 * A RetrievalFilter on a document's metadata, with the semantics of the API reference: notEquals also matches a
 * missing key; the comparisons match numbers only (a string operand matches nothing); an unknown or empty node,
 * which validation refuses, matches nothing.
 */
function matchesFilter(filter: Json, metadata: Json): boolean {
  const [operator, operand] = Object.entries(filter)[0] ?? [];
  if (operator === 'andAll') return asList(operand).every((f) => matchesFilter(asObject(f), metadata));
  if (operator === 'orAll') return asList(operand).some((f) => matchesFilter(asObject(f), metadata));
  if (!(FILTER_ATTRIBUTE_OPERATORS as readonly string[]).includes(operator ?? '')) return false;
  const { key, value } = asObject(operand);
  const present = Object.hasOwn(metadata, asString(key));
  return compare(operator as string, present, metadata[asString(key)], value);
}

function compare(operator: string, present: boolean, actual: unknown, expected: unknown): boolean {
  if (operator === 'notEquals') return !present || actual !== expected;
  if (!present) return false;
  const both = typeof actual === 'number' && typeof expected === 'number';
  switch (operator) {
    case 'equals':
      return actual === expected;
    case 'greaterThan':
      return both && (actual as number) > (expected as number);
    case 'greaterThanOrEquals':
      return both && (actual as number) >= (expected as number);
    case 'lessThan':
      return both && (actual as number) < (expected as number);
    case 'lessThanOrEquals':
      return both && (actual as number) <= (expected as number);
    case 'in':
      return asList(expected).includes(actual);
    case 'notIn':
      return !asList(expected).includes(actual);
    case 'startsWith':
      return typeof actual === 'string' && typeof expected === 'string' && actual.startsWith(expected);
    case 'listContains':
      return asList(actual).includes(expected);
    case 'stringContains':
      return stringContains(actual, expected);
    default:
      return false;
  }
}

/** A string containing the value, or a list with a member that does. */
function stringContains(actual: unknown, expected: unknown): boolean {
  if (typeof expected !== 'string') return false;
  if (typeof actual === 'string') return actual.includes(expected);
  return asList(actual).some((member) => typeof member === 'string' && member.includes(expected));
}

/** Lower-cased words (letters and digits), split by a single character class. */
function termsOf(text: string): Set<string> {
  return new Set(
    text
      .toLowerCase()
      .split(/[^\p{L}\p{N}]+/u)
      .filter(Boolean),
  );
}

/** The share of the query's distinct words the text contains: 0..1. */
function lexicalScore(queryTerms: ReadonlySet<string>, text: string): number {
  if (queryTerms.size === 0) return 0;
  const documentTerms = termsOf(text);
  let shared = 0;
  for (const term of queryTerms) if (documentTerms.has(term)) shared++;
  return shared / queryTerms.size;
}

function wordsOf(text: string): string[] {
  return text.split(/\s+/).filter(Boolean);
}

function textOfBlocks(blocks: readonly Record<string, unknown>[] | undefined): string {
  return asList(blocks)
    .map((block) => asString(asObject(block).text))
    .filter(Boolean)
    .join('\n');
}

function lastUserText(request: ConverseInput): string {
  const last = [...asList(request.messages)].reverse().find((m) => asObject(m).role === 'user');
  const text = textOfBlocks(asObject(last).content as Record<string, unknown>[] | undefined);
  return text === '' ? '(no text)' : text;
}

function allTextOf(request: ConverseInput): string {
  return [
    textOfBlocks(request.system),
    ...asList(request.messages).map((m) => textOfBlocks(asObject(m).content as Record<string, unknown>[])),
  ].join('\n');
}
