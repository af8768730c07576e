/**
 * What the core tells operators: counts and durations by name, with low-cardinality dimensions only (an error code,
 * a status; never an organization, agent, document or session id: each distinct value is a new CloudWatch series).
 * In AWS the Powertools adapter prints them as EMF lines (adapters/metrics/powertools-metrics.ts).
 */

/** Every metric the service emits; the stack's alarms and dashboard name them from here too. */
export const METRIC = {
  /** Uploads completed (a new document or a new version), each counted once, retries of the call not. */
  documentsUploaded: 'DocumentsUploaded',
  documentsReady: 'DocumentsReady',
  /** Dimension `errorCode`. */
  documentsFailed: 'DocumentsFailed',
  /** Milliseconds from upload-complete (the document's last `uploaded` write) to `ready`. */
  processingDuration: 'ProcessingDuration',
  /** Chunks of the documents that became `ready` (counted once per upload, at its `ready` write). */
  chunksIndexed: 'ChunksIndexed',
  /** Documents the watchdog found still `uploaded` past its limit (retried or failed by it). */
  documentsStuckUploaded: 'DocumentsStuckUploaded',
  /**
   * Owed work of documents the watchdog queued again (its message lost or dead-lettered): dimension `work`
   * (`delete-document`, `sync-metadata`).
   */
  documentWorkRequeued: 'DocumentWorkRequeued',
  authorizerDenied: 'AuthorizerDenied',
  /** Milliseconds of one retrieval: the query's embedding (if any) and the index query. */
  queryLatency: 'QueryLatency',
  /** Results one retrieval returned (after minScore). */
  queryResults: 'Results',
  /** Retrievals that returned nothing. */
  emptyResults: 'EmptyResults',
  /** Flow invocations by how they ended: dimension `status` (completed, paused, failed, handedOver). */
  runs: 'Runs',
  /** Flow runs that failed, dimension `errorCode`. */
  nodeFailures: 'NodeFailures',
  /** Calls to a flow's model: prompt answers, tool turns, parameter inference, prompt conditions. */
  modelCalls: 'ModelCalls',
  /** Tools a flow ran: tool nodes and the scoped calls of prompt nodes. */
  toolCalls: 'ToolCalls',
  /** Steps browser tasks took. */
  browserSteps: 'BrowserSteps',
  /** Files of a ZIP archive that became documents (queued for processing), counted once the archive is read. */
  zipFilesImported: 'ZipFilesImported',
} as const;

export type MetricName = (typeof METRIC)[keyof typeof METRIC];

/** Dimension names and values: a handful of values each (codes, statuses). */
export type MetricDimensions = Readonly<Record<string, string>>;

export interface OperationalMetrics {
  /** Adds `value` (default 1) to the count `name`. */
  count(name: MetricName, value?: number, dimensions?: MetricDimensions): void;
  /** Records one duration in milliseconds. */
  milliseconds(name: MetricName, value: number, dimensions?: MetricDimensions): void;
}

/** For code paths (and tests) where nobody collects metrics. */
export const NO_METRICS: OperationalMetrics = {
  count: () => undefined,
  milliseconds: () => undefined,
};
