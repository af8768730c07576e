/**
 * A cloud assembly whose stack has nested stacks (the API's route functions, one nested stack per area:
 * lib/constructs/platform-api.ts) read as ONE template equivalent to the deployed whole: each nested stack's resources
 * merged into its parent's, with its parameters replaced by the values its parent passes and its outputs, where the
 * parent reads them, by their values. The stack-check (stack-runner.ts, deploy-rules.ts, iam.ts, triggers.ts) then
 * reads every resource of the deployment as it did when there was one template. Recursive: a nested stack's own
 * nested stacks are merged first.
 *
 * What is not carried over: `AWS::StackName` and `AWS::StackId`, which name the nested stack inside it and the parent
 * here (the stack-check resolves both to the parent's); each nested template's `CDKMetadata` (CDK's version report,
 * `cdk synth`'s default, one in every template under the same id: the parent's is kept). A nested stack that is
 * conditional, or named by `Ref` or by an attribute other than its outputs, is refused.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { CfnTemplate, Json, TemplateResource } from './cloud-assembly';

/** A template as CloudFormation reads it: its resources, and what a nested stack declares and gives back. */
export interface TemplateDocument extends CfnTemplate {
  readonly Parameters?: Record<string, { readonly Default?: Json }>;
  readonly Outputs?: Record<string, { readonly Value: Json }>;
  readonly Conditions?: Record<string, Json>;
  readonly Mappings?: Record<string, Json>;
}

/** The sections a nested template's own names are declared in, merged as its resources are. */
const MERGED_SECTIONS = ['Conditions', 'Mappings'] as const;
/** Sections of a nested template the flattening cannot carry into its parent. */
const REFUSED_SECTIONS = ['Transform', 'Rules'];

/** One template file of the assembly, as synthesized: what CloudFormation counts its quotas on. */
export interface AssemblyTemplate {
  /** Path of the file. */
  readonly file: string;
  /** The logical ids of the AWS::CloudFormation::Stack resources that lead to it from the parent; [] for the parent. */
  readonly nestedAt: readonly string[];
  readonly template: TemplateDocument;
}

export const NESTED_STACK_TYPE = 'AWS::CloudFormation::Stack';
/** CDK's version report: nothing of the application, and in every template under one id. */
const CDK_METADATA_TYPE = 'AWS::CDK::Metadata';
/** Where CDK names a nested stack's template file in cdk.out (with asset metadata, the CLI's default). */
const ASSET_PATH_METADATA = 'aws:asset:path';

/**
 * The flattened template of `file` (a template of `directory`) and every template file it is made of, `file` first.
 * Throws when two templates declare one logical id, or when a nested template cannot be found or read.
 */
export function flattenTemplate(
  directory: string,
  file: string,
): { readonly template: TemplateDocument; readonly templates: readonly AssemblyTemplate[] } {
  const templates: AssemblyTemplate[] = [];
  const read = (templateFile: string): TemplateDocument =>
    JSON.parse(fs.readFileSync(templateFile, 'utf8')) as TemplateDocument;
  const template = flattenDocument(read(file), {
    file,
    nestedAt: [],
    read,
    templateFileOf: (id, resource) => nestedTemplateFile(directory, id, resource),
    templates,
  });
  return { template, templates };
}

interface FlattenContext {
  readonly file: string;
  readonly nestedAt: readonly string[];
  read(file: string): TemplateDocument;
  templateFileOf(logicalId: string, resource: TemplateResource): string;
  readonly templates: AssemblyTemplate[];
}

/** The file of a nested stack's template: its `aws:asset:path` metadata, or the asset whose key its TemplateURL names. */
export function nestedTemplateFile(directory: string, logicalId: string, resource: TemplateResource): string {
  const named = resource.Metadata?.[ASSET_PATH_METADATA];
  if (typeof named === 'string') return path.join(directory, named);
  // Without asset metadata (`cdk synth --no-asset-metadata`, or an app synthesized in-process without the CLI's
  // context): the TemplateURL ends with the asset's object key, and the asset manifests say which file that is.
  const key = /([^/]+)$/.exec(lastString(resource.Properties?.TemplateURL ?? null) ?? '')?.[1];
  if (key) {
    for (const manifest of fs.readdirSync(directory).filter((f) => f.endsWith('.assets.json'))) {
      const files = (
        JSON.parse(fs.readFileSync(path.join(directory, manifest), 'utf8')) as {
          files?: Record<string, { source: { path?: string }; destinations: Record<string, { objectKey: string }> }>;
        }
      ).files;
      for (const asset of Object.values(files ?? {})) {
        if (asset.source.path && Object.values(asset.destinations).some((d) => d.objectKey === key)) {
          return path.join(directory, asset.source.path);
        }
      }
    }
  }
  throw new Error(`${logicalId}: no template file for this nested stack (no ${ASSET_PATH_METADATA}, no asset ${key})`);
}

/** The last string of a TemplateURL (a string or a Fn::Join). */
function lastString(value: Json): string | undefined {
  if (typeof value === 'string') return value;
  const join = (value as { 'Fn::Join'?: [string, Json[]] } | null)?.['Fn::Join'];
  const last = join?.[1].at(-1);
  return typeof last === 'string' ? last : undefined;
}

function flattenDocument(document: TemplateDocument, context: FlattenContext): TemplateDocument {
  context.templates.push({ file: context.file, nestedAt: context.nestedAt, template: document });
  const resources: Record<string, TemplateResource> = {};
  const sections = Object.fromEntries(MERGED_SECTIONS.map((name) => [name, { ...(document[name] ?? {}) }])) as Record<
    (typeof MERGED_SECTIONS)[number],
    Record<string, Json>
  >;
  /** Each nested stack merged here: its outputs' values, and the ids of the resources it brought. */
  const nested = new Map<string, { outputs: Record<string, Json>; resourceIds: string[] }>();
  const origin = new Map<string, string>();
  const stackIds = new Set(
    Object.entries(document.Resources)
      .filter(([, resource]) => resource.Type === NESTED_STACK_TYPE)
      .map(([id]) => id),
  );

  const add = (id: string, resource: TemplateResource, from: string) => {
    if (id in resources || stackIds.has(id)) {
      throw new Error(`logical id ${id} is declared by both ${origin.get(id) ?? context.file} and ${from}`);
    }
    resources[id] = resource;
    origin.set(id, from);
  };

  for (const [id, resource] of Object.entries(document.Resources)) {
    if (resource.Type !== NESTED_STACK_TYPE) {
      add(id, resource, context.file);
      continue;
    }
    if ((resource as { Condition?: string }).Condition !== undefined) {
      throw new Error(`${id}: a conditional nested stack cannot be flattened`);
    }
    const file = context.templateFileOf(id, resource);
    const child = flattenDocument(context.read(file), { ...context, file, nestedAt: [...context.nestedAt, id] });
    const refused = REFUSED_SECTIONS.filter((name) => name in child);
    if (refused.length > 0) throw new Error(`${file}: its ${refused.join(' and ')} cannot be flattened`);
    const given = (resource.Properties?.Parameters ?? {}) as Record<string, Json>;
    const declared = child.Parameters ?? {};
    for (const name of Object.keys(given)) {
      if (!(name in declared)) throw new Error(`${id} passes parameter ${name}, which ${file} does not declare`);
    }
    const values: Record<string, Json> = {};
    for (const [name, parameter] of Object.entries(declared)) {
      const value = given[name] ?? parameter.Default;
      if (value === undefined) throw new Error(`${id} gives no value for parameter ${name} of ${file}`);
      values[name] = value;
    }
    const substituted = substituteParameters(
      {
        Resources: child.Resources,
        Outputs: child.Outputs ?? {},
        Conditions: child.Conditions ?? {},
      } as unknown as Json,
      values,
    ) as unknown as Required<Pick<TemplateDocument, 'Resources' | 'Outputs' | 'Conditions'>>;
    const merged = Object.entries(substituted.Resources).filter(([, r]) => r.Type !== CDK_METADATA_TYPE);
    for (const [childId, childResource] of merged) add(childId, childResource, file);
    for (const section of MERGED_SECTIONS) {
      const declared = section === 'Conditions' ? substituted.Conditions : (child[section] ?? {});
      for (const [name, entry] of Object.entries(declared)) {
        // The same name with the same definition is one (CDK's CDKMetadataAvailable is in every template).
        const known = sections[section][name];
        if (known !== undefined && JSON.stringify(known) !== JSON.stringify(entry)) {
          throw new Error(`${section} ${name}: declared differently by ${context.file} and ${file}`);
        }
        sections[section][name] = entry;
      }
    }
    nested.set(id, {
      outputs: Object.fromEntries(Object.entries(substituted.Outputs).map(([name, output]) => [name, output.Value])),
      resourceIds: merged.map(([childId]) => childId),
    });
  }

  if (nested.size === 0) return document;
  const flattened = replaceNestedOutputs(
    { Resources: resources, Outputs: document.Outputs ?? {}, Conditions: sections.Conditions } as unknown as Json,
    nested,
  ) as unknown as Required<Pick<TemplateDocument, 'Resources' | 'Outputs' | 'Conditions'>>;
  // A resource that waited for a whole nested stack waits for each of its resources.
  for (const resource of Object.values(flattened.Resources)) {
    if (resource.DependsOn === undefined) continue;
    const on = (Array.isArray(resource.DependsOn) ? resource.DependsOn : [resource.DependsOn]).map(String);
    (resource as { DependsOn?: Json }).DependsOn = [
      ...new Set(on.flatMap((id) => nested.get(id)?.resourceIds ?? [id])),
    ];
  }
  const result: Record<string, unknown> = { ...document, Resources: flattened.Resources };
  if (document.Outputs) result.Outputs = flattened.Outputs;
  if (Object.keys(flattened.Conditions).length > 0) result.Conditions = flattened.Conditions;
  if (Object.keys(sections.Mappings).length > 0) result.Mappings = sections.Mappings;
  return result as unknown as TemplateDocument;
}

type Rewrite = (node: { [key: string]: Json }) => Json | undefined;

/** `value` with every object node `rewrite` answers for replaced by its answer, deepest nodes first otherwise. */
function rewriteJson(value: Json, rewrite: Rewrite): Json {
  if (Array.isArray(value)) return value.map((v) => rewriteJson(v, rewrite));
  if (value === null || typeof value !== 'object') return value;
  const replaced = rewrite(value);
  if (replaced !== undefined) return replaced;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, rewriteJson(v, rewrite)]));
}

/** Names of Fn::Sub: `${Name}` and `${Name.Attribute}`, not `${!Literal}`. */
const SUB_NAME = /\$\{(?!!)([^}]+)\}/g;

/**
 * A Fn::Sub whose names `rename` answers for become variables of its map: `rename(name)` gives the expression of
 * the name, and the name is replaced by a fresh variable holding it (a name its map already holds is its map's).
 */
function rewriteSub(node: { [key: string]: Json }, rename: (name: string) => Json | undefined, rewrite: Rewrite): Json {
  const argument = node['Fn::Sub'];
  const [text, givenVariables] = (typeof argument === 'string' ? [argument, {}] : argument) as [
    string,
    Record<string, Json>,
  ];
  const variables: Record<string, Json> = Object.fromEntries(
    Object.entries(givenVariables).map(([k, v]) => [k, rewriteJson(v, rewrite)]),
  );
  let changed = false;
  const named = new Set([...text.matchAll(SUB_NAME)].map((match) => match[1].split('.')[0]));
  const rewritten = text.replace(SUB_NAME, (whole, name: string) => {
    if (name in givenVariables) return whole;
    const expression = rename(name);
    if (expression === undefined) return whole;
    changed = true;
    // A fresh variable: not one of the map's (unless it holds this very value), nor a name the text uses.
    let variable = name.replace(/[^0-9A-Za-z]/g, '');
    while (
      (variable in variables && JSON.stringify(variables[variable]) !== JSON.stringify(expression)) ||
      (variable !== name && named.has(variable))
    ) {
      variable += 'X';
    }
    variables[variable] = expression;
    return `\${${variable}}`;
  });
  if (!changed && typeof argument === 'string') return node;
  return { 'Fn::Sub': Object.keys(variables).length === 0 ? rewritten : [rewritten, variables] };
}

/** `{Ref: <parameter>}` and `${<parameter>}` replaced by the value the parent passes. */
export function substituteParameters(value: Json, values: Readonly<Record<string, Json>>): Json {
  const rewrite: Rewrite = (node) => {
    const keys = Object.keys(node);
    if (keys.length !== 1) return undefined;
    if (keys[0] === 'Ref' && typeof node.Ref === 'string' && node.Ref in values) return values[node.Ref];
    if (keys[0] === 'Fn::Sub') return rewriteSub(node, (name) => values[name], rewrite);
    return undefined;
  };
  return rewriteJson(value, rewrite);
}

/**
 * `{"Fn::GetAtt": [<nested stack>, "Outputs.<Name>"]}` and `${<nested stack>.Outputs.<Name>}` replaced by the output's
 * value; any other reference to a nested stack is refused (the flattened template has no such resource).
 */
export function replaceNestedOutputs(
  value: Json,
  nested: ReadonlyMap<string, { readonly outputs: Readonly<Record<string, Json>> }>,
): Json {
  const output = (id: string, attribute: string): Json | undefined => {
    const stack = nested.get(id);
    if (!stack) return undefined;
    const name = /^Outputs\.(.+)$/.exec(attribute)?.[1];
    if (name === undefined) throw new Error(`${id}.${attribute}: only the outputs of a nested stack can be read`);
    if (!(name in stack.outputs)) throw new Error(`${id} has no output ${name}`);
    return stack.outputs[name];
  };
  const rewrite: Rewrite = (node) => {
    const keys = Object.keys(node);
    if (keys.length !== 1) return undefined;
    const argument = node[keys[0]];
    if (keys[0] === 'Ref' && typeof argument === 'string' && nested.has(argument)) {
      throw new Error(`Ref ${argument}: a nested stack's id has no value in the flattened template`);
    }
    if (keys[0] === 'Fn::GetAtt') {
      const [id, ...attribute] = Array.isArray(argument) ? argument.map(String) : String(argument).split('.');
      return output(id, attribute.join('.'));
    }
    if (keys[0] === 'Fn::Sub') {
      return rewriteSub(
        node,
        (name) => {
          const [id, ...attribute] = name.split('.');
          return attribute.length > 0 ? output(id, attribute.join('.')) : undefined;
        },
        rewrite,
      );
    }
    return undefined;
  };
  return rewriteJson(value, rewrite);
}
