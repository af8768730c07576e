/** What the tests of the processing jobs (a knowledge base's deletion, its reindex) set up alike. */
import type { ProcessingMessage, ProcessingQueue } from '#ports/services';
import type { KnowledgeBaseRecord } from '#ports/stores';

/** A knowledge base of org-1's agent-1, to put in the knowledge bases table. */
export function knowledgeBaseFixture(knowledgeBaseId: string): KnowledgeBaseRecord {
  return {
    organizationId: 'org-1',
    agentId: 'agent-1',
    knowledgeBaseId,
    name: 'Manuals',
    description: null,
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt: '2026-01-01T00:00:00.000Z',
  };
}

export interface QueuedMessage {
  readonly message: ProcessingMessage;
  readonly delaySeconds?: number;
}

/** A processing queue that keeps what is sent, in order, for the test to deliver by hand. */
export function recordingQueue(): { readonly queue: ProcessingQueue; readonly queued: QueuedMessage[] } {
  const queued: QueuedMessage[] = [];
  return {
    queued,
    queue: {
      send: async (message, options) => {
        queued.push({ message, delaySeconds: options?.delaySeconds });
      },
      sendAll: async (messages) => {
        for (const message of messages) queued.push({ message });
      },
    },
  };
}
