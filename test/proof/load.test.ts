/**
 * Issue 7, "Load": upload flows and retrieval queries at the same time against the local runtime (loopback only,
 * bounded in count and time): nothing is lost. 20 flows and 10 query lanes in `npm test`, 200 and 50 with
 * PROOF_SIZE=full (`npm run test:load`). The latencies are printed (p50, p99, max), never asserted; the same load
 * with the figures beside the requests alone is `npm run bench -- load`. The load itself is bench/load-driver.ts.
 */
import {
  createLoadDataset,
  figureLines,
  type LoadOutcome,
  type LoadTarget,
  loadFigures,
  PHASE_TIMEOUT_MS,
  QUERY_ROUNDS,
  runLoad,
  type Seed,
  seedDocuments,
  settleAndCheck,
} from '../../bench/load-driver';
import { startService, type TestService } from '../helpers/service';
import { printFigures, proofSize } from './size';

const SIZE = proofSize({ uploads: 20, queries: 10 }, { uploads: 200, queries: 50 });
const SEEDS = 3;

let service: TestService;
let seeds: Seed[];
let outcome: LoadOutcome;

beforeAll(async () => {
  service = await startService();
  if (!service.dynamodbEndpoint || !service.engineCredentials) {
    throw new Error('the load counts document records in the local runtime’s DynamoDB');
  }
  const target: LoadTarget = {
    baseUrl: service.baseUrl,
    token: service.tokens[0],
    dynamodb: {
      endpoint: service.dynamodbEndpoint,
      documentsTable: 'documents',
      credentials: service.engineCredentials,
    },
  };
  const dataset = await createLoadDataset(target, 'proof');
  seeds = await seedDocuments(target, dataset, SEEDS);
  const run = await runLoad(target, dataset, seeds, SIZE);
  outcome = await settleAndCheck(target, dataset, seeds, run);
  printFigures('load', figureLines(SIZE, loadFigures(outcome)));
}, 5 * PHASE_TIMEOUT_MS);
afterAll(() => service?.stop());

it('answers every request of the load with 200: no error, no timeout, no refused connection', () => {
  expect(outcome.run.flows).toHaveLength(SIZE.uploads);
  expect(outcome.run.queries).toHaveLength(SIZE.queries * QUERY_ROUNDS);
  expect(outcome.problems.failedRequests).toEqual([]);
});

it('keeps finding the seeded documents while the index is written', () => {
  expect(outcome.run.queries.filter((q) => q.seed).length).toBeGreaterThan(0);
  expect(outcome.problems.seedMisses).toEqual([]);
});

it('brings every uploaded document to ready', () => {
  expect(outcome.problems.notReady).toEqual([]);
  expect([...outcome.states.values()].filter((s) => s.status === 'ready')).toHaveLength(SIZE.uploads);
});

it('finds each document by its own word, in exactly one chunk', () => {
  expect(outcome.problems.notFound).toEqual([]);
});

it('holds exactly one record per uploaded file: no duplicate, no reservation left behind, nothing else', () => {
  expect(outcome.problems.records).toEqual([]);
});
