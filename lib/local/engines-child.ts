/**
 * The engines process (lib/local/engines-process.ts): starts the engines with the options in argv[2] (JSON), sends
 * their endpoints to the parent, and stops them when asked or when the parent's channel closes.
 */
// First: the log level, before any module builds a logger.
import './log-level';
import { Session } from 'node:inspector/promises';
import { startEngines } from './engines';
import type { EngineProcessOptions, EnginesCommand, EnginesMessage } from './engines-process';

async function main(): Promise<void> {
  const options = JSON.parse(process.argv[2] ?? '{}') as EngineProcessOptions;
  const send = (message: EnginesMessage) => {
    if (process.connected) process.send?.(message);
  };
  // The parent stops this process last (Ctrl-C reaches the whole process group): SIGINT is its to act on.
  process.on('SIGINT', () => undefined);
  const engines = await startEngines(options).catch((error: unknown) => {
    send({ kind: 'failed', message: error instanceof Error ? error.message : String(error) });
    process.exit(1);
  });
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await engines.stop();
    process.exit(0);
  };
  let profiler: Session | undefined;
  const answer = async (command: Exclude<EnginesCommand, { kind: 'stop' }>): Promise<unknown> => {
    if (command.kind === 'cpu') {
      const { user, system } = process.cpuUsage();
      return (user + system) / 1000;
    }
    if (command.kind === 'profile-start') {
      profiler ??= new Session();
      profiler.connect();
      await profiler.post('Profiler.enable');
      await profiler.post('Profiler.setSamplingInterval', { interval: 500 });
      await profiler.post('Profiler.start');
      return null;
    }
    if (!profiler) return null;
    const { profile } = await profiler.post('Profiler.stop');
    profiler.disconnect();
    profiler = undefined;
    return profile;
  };
  process.on('message', (command: EnginesCommand) => {
    if (command.kind === 'stop') {
      void stop();
      return;
    }
    answer(command).then(
      (value) => send({ kind: 'answer', id: command.id, value }),
      (error: unknown) => send({ kind: 'answer', id: command.id, value: { error: String(error) } }),
    );
  });
  process.on('disconnect', () => void stop());
  process.on('SIGTERM', () => void stop());
  const { stop: _stop, ...endpoints } = engines;
  send({ kind: 'ready', endpoints });
}

main().catch((error: unknown) => {
  console.error('engines process failed:', error);
  process.exit(1);
});
