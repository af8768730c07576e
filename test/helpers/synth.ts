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
import { readCloudAssembly } from '../../lib/stack-check/cloud-assembly';
import type { AssemblyTemplate } from '../../lib/stack-check/nested-stacks';

const cdkJson = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'cdk.json'), 'utf8')) as {
  context: Record<string, unknown>;
};

export interface Synthesized {
  readonly stack: AgentPlatformStack;
  /**
   * The deployed whole: the stack's template with its nested stacks (the API's route functions, one per area) merged
   * in, each parameter replaced by what the stack passes and each output by its value (lib/stack-check/nested-stacks.ts),
   * so a route function's grant names the table itself, as in the deployment.
   */
  readonly template: Template;
  /** Each template as synthesized, the stack's own first: what CloudFormation's quotas per template count. */
  readonly templates: readonly AssemblyTemplate[];
  /** cdk-nag findings nobody acknowledged. */
  readonly violations: unknown[];
  /** Removes the cloud assembly. */
  dispose(): void;
}

/** The deployed whole of a synthesized cloud assembly (Synthesized.template). */
export function deployedTemplate(directory: string): Template {
  return Template.fromJSON(readCloudAssembly(directory).template as never);
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
  const read = readCloudAssembly(assembly.directory);
  return {
    stack: built.stack,
    template: Template.fromJSON(read.template as never),
    templates: read.templates,
    violations,
    dispose: () => fs.rmSync(outdir, { recursive: true, force: true }),
  };
}
