/**
 * The X-Ray SDK (under Powertools Tracer) starts in automatic mode when it loads: cls-hooked's async hook, with a
 * destroy callback, on every promise of the process. Outside Lambda the Tracer is disabled and records nothing, yet
 * that hook cost the local runtime's API process about 10 % of its CPU under load (bench/RESULTS.md, the load's
 * profile: registerDestroyHook, promise hooks, and the garbage they leave). So outside Lambda (no AWS_EXECUTION_ENV,
 * which Powertools itself reads to decide) the SDK starts in manual mode, unless the user chose a mode. Imported
 * before the Tracer, by shared/tracer.ts.
 */
if (!process.env.AWS_EXECUTION_ENV && process.env.AWS_XRAY_MANUAL_MODE === undefined) {
  process.env.AWS_XRAY_MANUAL_MODE = 'true';
}

export {};
