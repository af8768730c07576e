/**
 * aps: the Agent Platform Service from a terminal, over the typed client (@agent-platform/client). Every command
 * answers 0 when all went well, 1 when something it did failed (a document, a definition, an API error), 2 for a
 * command line it cannot run.
 */
import { createWriteStream } from 'node:fs';
import { resolve } from 'node:path';
import { ApiError, createClient } from '@agent-platform/client';
import { Command, InvalidArgumentError, Option } from 'commander';
import {
  csvRow,
  ENVIRONMENTS,
  type Environment,
  EVENT_COLUMNS,
  exportEvents,
  formatHits,
  parseFilter,
  pullFlows,
  pushFlows,
  query,
  validateFlows,
} from './commands';
import { configFile, platform, readConfig, removeConfig, UsageError, writeConfig } from './config';
import { progressOn } from './progress';
import { syncFolder } from './sync';

const positiveInt = (name: string) => (value: string) => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError(`${name} must be a whole number from 1`);
  return n;
};

const environmentOption = () =>
  new Option('--env <environment>', 'the environment').choices(ENVIRONMENTS as unknown as string[]);

export async function main(argv: readonly string[]): Promise<number> {
  let code = 0;
  const out = (text: string) => process.stdout.write(text);
  const program = new Command('aps')
    .description('The Agent Platform Service from a terminal.')
    .version('0.1.0')
    .showHelpAfterError()
    .exitOverride();

  program
    .command('login')
    .description(`keep the service's address and a token in ${configFile()} (mode 0600)`)
    .option('--base-url <url>', 'the service, e.g. http://127.0.0.1:4000 (default: the one kept)')
    .option('--token <token>', 'an organization token (default: read from standard input)')
    .option('--no-verify', 'keep them without asking the service whether the token is known')
    .action(async (options: { baseUrl?: string; token?: string; verify: boolean }) => {
      const baseUrl = (options.baseUrl ?? readConfig().baseUrl)?.replace(/\/+$/, '');
      if (!baseUrl) throw new UsageError('--base-url is required the first time');
      const token = options.token ?? (await readStdin()).trim();
      if (!token) throw new UsageError('no token: give --token or pipe it in');
      if (options.verify) {
        // Any scope will do: an unknown token is 401 whatever the route, a known one without this scope 403.
        const { response } = await createClient({ baseUrl, token }).GET('/dashboard/organization');
        if (response.status === 401) throw new UsageError(`the service at ${baseUrl} does not know this token (401)`);
      }
      writeConfig({ baseUrl, token });
      out(`logged in to ${baseUrl}; kept in ${configFile()}\n`);
    });

  program
    .command('logout')
    .description('forget the kept address and token')
    .action(() => {
      removeConfig();
      out(`removed ${configFile()}\n`);
    });

  const kb = program.command('kb').description('knowledge bases');
  kb.command('sync')
    .description(
      'upload the new and changed files of a folder (by sha256), delete removed ones with --delete; resumable (.aps-sync.json)',
    )
    .argument('<folder>', 'the folder to sync (its dot files and folders are left out)')
    .requiredOption('--agent <agentId>', 'the agent')
    .requiredOption('--kb <knowledgeBaseId>', 'the knowledge base')
    .addOption(environmentOption().makeOptionMandatory())
    .option(
      '--labels-csv <file>',
      "labels per file: a ZIP import's label CSV (identifier,label1,label2,customMeta1..4)",
    )
    .option('--label1 <label>', 'label1 of every file the CSV does not name')
    .option('--label2 <label>', 'label2 of every file the CSV does not name')
    .option('--delete', 'delete the documents of files gone from the folder', false)
    .option('--concurrency <n>', 'files at a time', positiveInt('--concurrency'), 4)
    .option(
      '--wait-timeout <seconds>',
      'how long to wait for a document to be ready or failed',
      positiveInt('--wait-timeout'),
      600,
    )
    .option('--no-wait', 'do not wait for processing (the next sync reports it)')
    .option('--no-progress', 'no progress bar')
    .option('--json', 'print the summary as JSON')
    .action(async (folder: string, options: SyncFlags) => {
      const summary = await syncFolder(
        platform(),
        {
          folder,
          agentId: options.agent,
          knowledgeBaseId: options.kb,
          environment: options.env,
          delete: options.delete,
          concurrency: options.concurrency,
          labelsCsv: options.labelsCsv,
          label1: options.label1,
          label2: options.label2,
          waitTimeoutMs: options.wait ? options.waitTimeout * 1000 : 0,
        },
        progressOn(process.stderr, options.progress && !options.json),
      );
      if (options.json) out(`${JSON.stringify(summary, null, 2)}\n`);
      else {
        out(
          `${summary.files} files: ${summary.uploaded.length} uploaded, ${summary.metadataUpdated.length} labels changed, ` +
            `${summary.unchanged.length} unchanged, ${summary.deleted.length} deleted\n` +
            `ready ${summary.ready.length}, failed ${summary.failed.length}, processing ${summary.processing.length}\n`,
        );
        for (const failure of summary.failed) out(`  failed ${failure.path}: ${failure.code} ${failure.message}\n`);
        for (const path of summary.notDeleted) out(`  gone from the folder, kept (use --delete): ${path}\n`);
        for (const warning of summary.warnings) out(`  warning: ${warning}\n`);
      }
      if (summary.failed.length > 0 || (options.wait && summary.processing.length > 0)) code = 1;
    });

  program
    .command('query')
    .description('retrieve from a knowledge base (the dashboard query endpoint)')
    .argument('<text>', 'the query')
    .requiredOption('--agent <agentId>', 'the agent')
    .requiredOption('--kb <knowledgeBaseId>', 'the knowledge base')
    .addOption(environmentOption().makeOptionMandatory())
    .option(
      '--filter <filter>',
      'key=value, key!=value, key>value or key<value (label1, label2); repeatable',
      collect,
      [],
    )
    .option('--results <n>', 'how many results (1–100, default 5)', positiveInt('--results'))
    .option('--min-score <score>', 'the least score kept (0–1)', Number)
    .option('--json', 'print the answer as JSON')
    .action(async (text: string, options: QueryFlags) => {
      const answer = await query(platform(), {
        agentId: options.agent,
        knowledgeBaseId: options.kb,
        environment: options.env,
        text,
        filters: options.filter.map(parseFilter),
        numberOfResults: options.results,
        minScore: options.minScore,
      });
      out(options.json ? `${JSON.stringify(answer, null, 2)}\n` : formatHits(answer.results));
    });

  const flows = program.command('flows').description('flow definitions as files: <agentId>.<environment>.json');
  flows
    .command('pull')
    .description("write the agents' stored definitions into a folder")
    .argument('<folder>')
    .option('--agent <agentId>', 'one agent (default: every agent)')
    .addOption(environmentOption())
    .action(async (folder: string, options: { agent?: string; env?: Environment }) => {
      const written = await pullFlows(platform(), resolve(folder), options.agent, options.env);
      for (const { file, version } of written) out(`pulled ${file} (version ${version})\n`);
      if (written.length === 0) out('no definitions stored\n');
    });
  flows
    .command('push')
    .description("store each file's definition; refused when it changed on the service since the pull (--force)")
    .argument('<folder>')
    .option('--agent <agentId>', 'only this agent')
    .addOption(environmentOption())
    .option('--force', 'overwrite whatever version is stored', false)
    .action(async (folder: string, options: { agent?: string; env?: Environment; force: boolean }) => {
      const results = await pushFlows(platform(), resolve(folder), {
        agentId: options.agent,
        environment: options.env,
        force: options.force,
      });
      for (const result of results) {
        if (result.error) {
          code = 1;
          out(`refused ${result.file}: ${result.error.code} ${result.error.message}\n`);
          for (const d of result.error.details) out(`  ${d.field}: ${d.message ?? d.rule} (${d.rule})\n`);
        } else out(`pushed ${result.file}: version ${result.version}${result.unchanged ? ' (unchanged)' : ''}\n`);
      }
      if (results.length === 0) out('no definition files (<agentId>.<environment>.json)\n');
    });
  flows
    .command('validate')
    .description('check each file against the service, storing nothing')
    .argument('<folder>')
    .option('--agent <agentId>', 'only this agent')
    .addOption(environmentOption())
    .action(async (folder: string, options: { agent?: string; env?: Environment }) => {
      const results = await validateFlows(platform(), resolve(folder), {
        agentId: options.agent,
        environment: options.env,
      });
      for (const result of results) {
        out(`${result.valid ? 'valid' : 'invalid'} ${result.file}\n`);
        for (const p of result.problems) {
          const where = [p.flow, p.node].filter(Boolean).join(' / ');
          out(`  ${p.field}: ${p.message} (${p.rule})${where ? ` [${where}]` : ''}\n`);
        }
        if (!result.valid) code = 1;
      }
    });

  const events = program.command('events').description('analytics events');
  events
    .command('export')
    .description("an agent's events in a window, newest first, as CSV or JSON lines")
    .requiredOption('--agent <agentId>', 'the agent')
    .addOption(environmentOption().default('production'))
    .option('--from <date>', 'ISO 8601 date or date-time, inclusive (2026-01-01, 2026-01-01T10:00Z)')
    .option('--to <date>', 'ISO 8601 date or date-time, inclusive at the precision written')
    .option('--event-name <name>', 'only this event')
    .option('--session <sessionId>', 'only this session')
    .option('--csv [file]', `CSV (${EVENT_COLUMNS.join(',')}) into a file, or to standard output`)
    .option('--page-size <n>', 'events a request (1–1000)', positiveInt('--page-size'), 1000)
    .action(async (options: EventFlags) => {
      const toFile = typeof options.csv === 'string' && options.csv !== '-';
      const sink = toFile ? createWriteStream(options.csv as string) : process.stdout;
      const write = (text: string) =>
        new Promise<void>((done) => (sink.write(text) ? done() : sink.once('drain', done)));
      let count = 0;
      if (options.csv) await write(`${EVENT_COLUMNS.join(',')}\r\n`);
      for await (const event of exportEvents(platform(), {
        agentId: options.agent,
        environment: options.env,
        from: options.from,
        to: options.to,
        eventName: options.eventName,
        sessionId: options.session,
        pageSize: options.pageSize,
      })) {
        await write(options.csv ? csvRow(event) : `${JSON.stringify(event)}\n`);
        count += 1;
      }
      if (toFile) {
        await new Promise<void>((done) => sink.end(done));
        out(`${count} events written to ${options.csv}\n`);
      }
    });

  try {
    await program.parseAsync([...argv]);
  } catch (error) {
    return reportError(error);
  }
  return code;
}

function reportError(error: unknown): number {
  const err = (text: string) => process.stderr.write(text);
  if (error instanceof ApiError) {
    err(`error: ${error.code} (${error.status}) ${error.message}\n`);
    for (const d of error.details) err(`  ${d.field}: ${d.message ?? d.rule} (${d.rule})\n`);
    return 1;
  }
  if (error instanceof UsageError) {
    err(`error: ${error.message}\n`);
    return 2;
  }
  // commander's own exits: --help and --version are 0, a command line it refused is 2 (it printed why).
  const commander = error as { code?: string; exitCode?: number };
  if (typeof commander.code === 'string' && commander.code.startsWith('commander.')) {
    return commander.exitCode === 0 ? 0 : 2;
  }
  // fetch's own failure says only "fetch failed"; its cause says why (ECONNREFUSED, ENOTFOUND, …).
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  const why = cause ? ` (${cause.code ?? cause.message})` : '';
  err(`error: ${error instanceof Error ? error.message : String(error)}${why}\n`);
  return 1;
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write('token: ');
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

interface SyncFlags {
  agent: string;
  kb: string;
  env: Environment;
  labelsCsv?: string;
  label1?: string;
  label2?: string;
  delete: boolean;
  concurrency: number;
  waitTimeout: number;
  wait: boolean;
  progress: boolean;
  json?: boolean;
}

interface QueryFlags {
  agent: string;
  kb: string;
  env: Environment;
  filter: string[];
  results?: number;
  minScore?: number;
  json?: boolean;
}

interface EventFlags {
  agent: string;
  env: Environment;
  from?: string;
  to?: string;
  eventName?: string;
  session?: string;
  csv?: string | boolean;
  pageSize: number;
}
