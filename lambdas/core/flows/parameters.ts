/** Tool parameters: what a tool declares, and the type check shared by the runtime and the models. */

/** A parameter a tool declares; the model infers the ones a tool node does not fix. */
export interface ToolParameterSpec {
  readonly type: 'string' | 'number' | 'boolean' | 'object' | 'array';
  readonly description?: string;
  readonly required?: boolean;
}

/** Whether a value has a tool parameter's type, as JSON would carry it (no conversion; null has no type). */
export function isParameterValueOfType(value: unknown, type: ToolParameterSpec['type']): boolean {
  switch (type) {
    case 'string':
      return typeof value === 'string';
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'boolean':
      return typeof value === 'boolean';
    case 'array':
      return Array.isArray(value);
    case 'object':
      return typeof value === 'object' && value !== null && !Array.isArray(value);
  }
}
