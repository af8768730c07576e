/**
 * The local runtime logs at WARN unless POWERTOOLS_LOG_LEVEL says otherwise. It must be in the environment before
 * any handler's logger is built: Powertools puts every warm invocation back to the level its logger was built with
 * (`refreshSampleRateCalculation`), so a level set later holds for the first request only, and every request after
 * it printed its INFO line. The entry points (bin/local.ts, bin/worker.ts, bench/run.ts) import this first.
 */
process.env.POWERTOOLS_LOG_LEVEL ||= 'WARN';
