/**
 * The properties of the node or edge selected on the canvas, drawn from the definition's own JSON schema
 * (web/src/generated/flow-schema.ts, made from the zod schema by `npm run flow:schema`): a text or a textarea per
 * string, a select per enum, a switch per boolean, a number input per number, with the schema's bounds, defaults and
 * descriptions; an object of such fields as a group, anything else (a list, a map) as a small JSON field. A field
 * the schema marks `x-only-when` shows only where it applies (a schedule's cron on a schedule trigger). The problems
 * the validation found are shown at their field.
 */
import {
  Alert,
  Badge,
  Button,
  Fieldset,
  NumberInput,
  Select,
  Stack,
  Switch,
  Text,
  Textarea,
  TextInput,
  Title,
} from '@mantine/core';
import { useEffect, useState } from 'react';
import type { Answer } from './api';
import type { FlowEdgeDefinition, FlowNodeDefinition, Problem } from './flows';
import { FLOW_SCHEMA } from './generated/flow-schema';
import type { JsonSchema } from './json-schema';

/** A model of the deployment a node may choose (GET /dashboard/models). */
export type ModelChoice = Answer<'/dashboard/models', 'get'>['data'][number];

type Values = Readonly<Record<string, unknown>>;
type Change = (fields: Record<string, unknown>) => void;

/** A field's words: `humanInTheLoop` → `Human in the loop`. */
export function fieldLabel(key: string): string {
  const words = key.replace(/([a-z0-9])([A-Z])/g, '$1 $2').toLowerCase();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

function typeOf(schema: JsonSchema): string | undefined {
  if (schema.enum) return 'enum';
  if (typeof schema.type === 'string') return schema.type;
  return undefined;
}

function applies(schema: JsonSchema, values: Values): boolean {
  const only = schema['x-only-when'];
  return !only || Object.entries(only).every(([field, value]) => values[field] === value);
}

function problemText(problems: readonly Problem[]): string | undefined {
  return problems.length ? problems.map((p) => p.message ?? p.rule).join('; ') : undefined;
}

function Field({
  name,
  schema,
  value,
  required,
  problems,
  onChange,
  label = fieldLabel(name),
}: {
  name: string;
  schema: JsonSchema;
  value: unknown;
  required: boolean;
  problems: readonly Problem[];
  onChange: (value: unknown) => void;
  label?: string;
}) {
  const error = problemText(problems);
  const description = schema.description;
  const kind = typeOf(schema);
  // What every field's row shows: its label, its help and the problem found in it.
  const row = { label, description, error };
  if (kind === 'enum') {
    return (
      <Select
        {...row}
        required={required}
        clearable={!required}
        data={(schema.enum ?? []).map(String)}
        value={value === undefined ? null : String(value)}
        onChange={(next) => onChange(next ?? undefined)}
        comboboxProps={{ withinPortal: true }}
      />
    );
  }
  if (kind === 'boolean') {
    const fallback = typeof schema.default === 'boolean' ? schema.default : false;
    return (
      <Switch
        {...row}
        checked={typeof value === 'boolean' ? value : fallback}
        // The default (or false) is said by leaving the field out, as a person writing the JSON would.
        onChange={(event) =>
          onChange(!required && event.currentTarget.checked === fallback ? undefined : event.currentTarget.checked)
        }
      />
    );
  }
  if (kind === 'number' || kind === 'integer') {
    return (
      <NumberInput
        {...row}
        required={required}
        min={schema.minimum}
        max={schema.maximum}
        allowDecimal={kind === 'number'}
        placeholder={schema.default === undefined ? undefined : `default ${schema.default}`}
        value={typeof value === 'number' ? value : ''}
        onChange={(next) => onChange(typeof next === 'number' ? next : undefined)}
      />
    );
  }
  if (kind === 'string') {
    const long = (schema.maxLength ?? 0) > 2000;
    const common = { ...row, required, value: typeof value === 'string' ? value : '' };
    const change = (text: string) => onChange(text === '' && !required ? undefined : text);
    return long ? (
      <Textarea {...common} autosize minRows={3} maxRows={10} onChange={(event) => change(event.currentTarget.value)} />
    ) : (
      <TextInput {...common} onChange={(event) => change(event.currentTarget.value)} />
    );
  }
  if (kind === 'object' && schema.properties && !schema.additionalProperties) {
    const object = (value ?? {}) as Values;
    return (
      <Fieldset legend={label}>
        {description && (
          <Text size="xs" c="dimmed">
            {description}
          </Text>
        )}
        <Switch
          label={`Set ${label.toLowerCase()}`}
          checked={value !== undefined}
          onChange={(event) => onChange(event.currentTarget.checked ? startingObject(schema) : undefined)}
        />
        {value !== undefined && (
          <Stack gap="xs" mt="xs">
            {Object.entries(schema.properties).map(([key, inner]) => (
              <Field
                key={key}
                name={key}
                schema={inner}
                value={object[key]}
                required={schema.required?.includes(key) ?? false}
                problems={problems.filter((p) => p.field.endsWith(`.${name}.${key}`))}
                onChange={(next) => {
                  const copy: Record<string, unknown> = { ...object };
                  if (next === undefined) delete copy[key];
                  else copy[key] = next;
                  onChange(copy);
                }}
              />
            ))}
          </Stack>
        )}
      </Fieldset>
    );
  }
  if (schema.anyOf?.every((option) => ['string', 'number', 'boolean'].includes(String(option.type)))) {
    // A scalar of several types (a `when` test's value): JSON when it reads as a number or boolean, else text.
    return (
      <TextInput
        {...row}
        description={`${description ?? ''} (a number, true or false, or text)`.trim()}
        value={value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value)}
        onChange={(event) => {
          const text = event.currentTarget.value;
          if (text === '') return onChange(undefined);
          onChange(/^(true|false|-?\d+(\.\d+)?)$/.test(text) ? JSON.parse(text) : text);
        }}
      />
    );
  }
  return <JsonField {...row} value={value} onChange={onChange} required={required} />;
}

function startingObject(schema: JsonSchema): Record<string, unknown> {
  const object: Record<string, unknown> = {};
  for (const key of schema.required ?? []) {
    const inner = schema.properties?.[key] ?? {};
    object[key] = inner.enum ? inner.enum[0] : inner.type === 'boolean' ? false : inner.type === 'number' ? 0 : '';
  }
  return object;
}

/** A value the form cannot show field by field, as JSON: applied when it parses, its syntax error said when not. */
function JsonField({
  label,
  description,
  error,
  value,
  required,
  onChange,
}: {
  label: string;
  description?: string;
  error?: string;
  value: unknown;
  required: boolean;
  onChange: (value: unknown) => void;
}) {
  const shown = value === undefined ? '' : JSON.stringify(value, null, 1);
  const [text, setText] = useState(shown);
  const [syntax, setSyntax] = useState<string | null>(null);
  useEffect(() => {
    setText((current) => {
      try {
        if (current.trim() !== '' && JSON.stringify(JSON.parse(current)) === JSON.stringify(value)) return current;
      } catch {
        // the person's half-typed JSON stays until the value changes elsewhere
      }
      return shown;
    });
  }, [shown, value]);
  return (
    <Textarea
      label={`${label} (JSON)`}
      description={description}
      error={syntax ?? error}
      required={required}
      autosize
      minRows={2}
      maxRows={8}
      styles={{ input: { fontFamily: 'monospace' } }}
      value={text}
      onChange={(event) => {
        const next = event.currentTarget.value;
        setText(next);
        if (next.trim() === '') {
          setSyntax(null);
          onChange(undefined);
          return;
        }
        try {
          const parsed = JSON.parse(next);
          setSyntax(null);
          onChange(parsed);
        } catch {
          setSyntax('Not JSON yet: the definition keeps the last value that was');
        }
      }}
    />
  );
}

/** The model picker of a prompt node: the deployment's models (GET /dashboard/models) set `llmConfig`. */
function ModelPicker({
  value,
  models,
  problems,
  onChange,
}: {
  value: unknown;
  models: readonly ModelChoice[];
  problems: readonly Problem[];
  onChange: (value: unknown) => void;
}) {
  const config = (value ?? {}) as { name?: string; properties?: { model?: string } };
  const key = (model: ModelChoice) => `${model.llmConfigName}|${model.id}`;
  const current =
    config.name === undefined
      ? 'default'
      : (models.find(
          (model) =>
            model.llmConfigName === config.name &&
            (model.provider === 'offline' || model.id === config.properties?.model),
        ) ?? null);
  return (
    <Stack gap={4}>
      <Select
        label="Model"
        description="The deployment's models (llmConfig); the default model when none is chosen"
        error={problemText(problems)}
        data={[
          { value: 'default', label: "The deployment's default model" },
          ...models.map((model) => ({
            value: key(model),
            label: `${model.id} (${model.llmConfigName}${model.default ? ', default' : ''})`,
          })),
        ]}
        value={current === 'default' ? 'default' : current ? key(current) : null}
        placeholder={config.name ? `${config.name} ${config.properties?.model ?? ''}` : undefined}
        onChange={(next) => {
          if (!next || next === 'default') return onChange(undefined);
          const model = models.find((m) => key(m) === next);
          if (!model) return;
          const rest = { ...(config.properties ?? {}) };
          delete rest.model;
          onChange(
            model.provider === 'offline'
              ? { name: model.llmConfigName }
              : { name: model.llmConfigName, properties: { ...rest, model: model.id } },
          );
        }}
      />
    </Stack>
  );
}

/** The name field: applied on Enter or when it loses the focus, and refused when another node has that name. */
function NameField({
  value,
  taken,
  problems,
  onRename,
}: {
  value: string;
  taken: (name: string) => boolean;
  problems: readonly Problem[];
  onRename: (name: string) => void;
}) {
  const [text, setText] = useState(value);
  useEffect(() => setText(value), [value]);
  const duplicate = text !== value && taken(text);
  const invalid = !/^[A-Za-z][A-Za-z0-9_-]{0,63}$/.test(text);
  const commit = () => {
    if (text !== value && !duplicate && !invalid) onRename(text);
  };
  return (
    <TextInput
      label="Name"
      required
      description="Unique across all flows: edges and jumps name the node by it (applied on Enter)"
      value={text}
      error={
        duplicate
          ? `Another node is named ${text}`
          : invalid
            ? 'Must start with a letter and hold at most 64 letters, digits, "_" or "-"'
            : problemText(problems)
      }
      onChange={(event) => setText(event.currentTarget.value)}
      onBlur={commit}
      onKeyDown={(event) => {
        if (event.key === 'Enter') commit();
      }}
    />
  );
}

export function NodeProperties({
  node,
  path,
  problems,
  models,
  taken,
  onChange,
}: {
  node: FlowNodeDefinition;
  /** The node's field path in the definition, `flows.<i>.nodes.<j>`. */
  path: string;
  problems: readonly Problem[];
  models: readonly ModelChoice[];
  taken: (name: string) => boolean;
  onChange: Change;
}) {
  const schema = FLOW_SCHEMA.nodes[node.type];
  const values = node as unknown as Values;
  const at = (key: string) =>
    problems.filter((p) => p.field === `${path}.${key}` || p.field.startsWith(`${path}.${key}.`));
  if (!schema) return <Alert color="red">No schema for node type {node.type}.</Alert>;
  return (
    <Stack gap="sm">
      <Title order={3} size="h5">
        Node {node.name} <Badge variant="light">{node.type}</Badge>
      </Title>
      {Object.entries(schema.properties ?? {}).map(([key, field]) => {
        if (key === 'type' || !applies(field, values)) return null;
        if (key === 'name') {
          return (
            <NameField
              key={key}
              value={node.name}
              taken={taken}
              problems={at(key)}
              onRename={(name) => onChange({ name })}
            />
          );
        }
        if (key === 'llmConfig') {
          return (
            <Stack key={key} gap={4}>
              <ModelPicker
                value={values[key]}
                models={models}
                problems={at(key)}
                onChange={(next) => onChange({ [key]: next })}
              />
              {values[key] !== undefined && (
                <Field
                  name={key}
                  label="Model settings"
                  schema={{
                    ...field,
                    description: 'llmConfig: { name, properties } (temperature, maxTokens, topP, …)',
                  }}
                  value={values[key]}
                  required={false}
                  problems={[]}
                  onChange={(next) => onChange({ [key]: next })}
                />
              )}
            </Stack>
          );
        }
        return (
          <Field
            key={key}
            name={key}
            schema={field}
            value={values[key]}
            required={schema.required?.includes(key) ?? false}
            problems={at(key)}
            onChange={(next) => onChange({ [key]: next })}
          />
        );
      })}
      <OtherProblems problems={problems} shown={Object.keys(schema.properties ?? {}).map((key) => `${path}.${key}`)} />
    </Stack>
  );
}

export function EdgeProperties({
  edge,
  path,
  problems,
  onChange,
  onDelete,
}: {
  edge: FlowEdgeDefinition;
  path: string;
  problems: readonly Problem[];
  onChange: Change;
  onDelete: () => void;
}) {
  const schema = FLOW_SCHEMA.edge;
  const values = edge as unknown as Values;
  const at = (key: string) =>
    problems.filter((p) => p.field === `${path}.${key}` || p.field.startsWith(`${path}.${key}.`));
  return (
    <Stack gap="sm">
      <Title order={3} size="h5">
        Edge {edge.from} → {edge.to}
      </Title>
      {Object.entries(schema.properties ?? {}).map(([key, field]) => {
        if (key === 'from' || key === 'to' || !applies(field, values)) return null;
        return (
          <Field
            key={key}
            name={key}
            schema={field}
            value={values[key]}
            required={schema.required?.includes(key) ?? false}
            problems={at(key)}
            onChange={(next) => {
              // A type that drops a field drops its value too: a condition is for promptCondition edges only.
              if (key === 'type') {
                const cleared = Object.fromEntries(
                  Object.entries(schema.properties ?? {})
                    .filter(([, other]) => !applies(other, { ...values, type: next }))
                    .map(([other]) => [other, undefined]),
                );
                onChange({ ...cleared, type: next });
              } else onChange({ [key]: next });
            }}
          />
        );
      })}
      <OtherProblems problems={problems} shown={['type', 'condition', 'when'].map((key) => `${path}.${key}`)} />
      <Button variant="default" color="red" onClick={onDelete}>
        Delete edge
      </Button>
    </Stack>
  );
}

function OtherProblems({ problems, shown }: { problems: readonly Problem[]; shown: readonly string[] }) {
  const others = problems.filter((p) => !shown.some((field) => p.field === field || p.field.startsWith(`${field}.`)));
  if (others.length === 0) return null;
  return (
    <Alert color="red" p="xs">
      {others.map((p) => (
        <Text key={`${p.field}:${p.rule}`} size="sm">
          {p.field}: {p.message}
        </Text>
      ))}
    </Alert>
  );
}
