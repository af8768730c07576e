/**
 * The app synthesized the way `cdk synth` builds it (bin/app.ts, cdk.json's context, cdk-nag), without bundling the
 * handlers (`aws:cdk:bundling-stacks`), which test/infra/stack.test.ts does once already.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Template } from 'aws-cdk-lib/assertions';
import { createApp } from '../../bin/app';
import type { AgentPlatformStack } from '../../lib/agent-platform-stack';

const cdkJson = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'cdk.json'), 'utf8')) as {
  context: Record<string, unknown>;
};

export interface Synthesized {
  readonly stack: AgentPlatformStack;
  readonly template: Template;
  /** cdk-nag findings nobody acknowledged. */
  readonly violations: unknown[];
  /** Removes the cloud assembly. */
  dispose(): void;
}

export function synthesizeUnbundled(context: Record<string, unknown> = {}): Synthesized {
  const outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'infra-'));
  const built = createApp({ context: { ...cdkJson.context, 'aws:cdk:bundling-stacks': [], ...context }, outdir });
  const assembly = built.app.synth();
  const report = path.join(assembly.directory, 'validation-report.json');
  const violations = fs.existsSync(report)
    ? (
        JSON.parse(fs.readFileSync(report, 'utf8')) as { pluginReports: { violations: unknown[] }[] }
      ).pluginReports.flatMap((r) => r.violations)
    : [];
  return {
    stack: built.stack,
    template: Template.fromStack(built.stack),
    violations,
    dispose: () => fs.rmSync(outdir, { recursive: true, force: true }),
  };
}
