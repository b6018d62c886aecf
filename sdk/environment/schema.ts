/**
 * A small JSON-Schema subset for dataset rows and tool arguments. It is plain data (so it can be
 * stored in a manifest, shown in the UI and rendered into a prompt) and its validator is plain
 * JavaScript (so it runs inside the sandbox too).
 */
export type ValueSchema =
  | { type: 'string'; description?: string; enum?: readonly string[] }
  | { type: 'number'; description?: string; integer?: boolean; minimum?: number; maximum?: number }
  | { type: 'boolean'; description?: string }
  | { type: 'array'; description?: string; items: ValueSchema }
  | ObjectSchema;

export interface ObjectSchema {
  type: 'object';
  description?: string;
  properties: Readonly<Record<string, ValueSchema>>;
  /** Property names that must be present; others may be missing. Defaults to all of them. */
  required?: readonly string[];
}

/** JSON values: what crosses the sandbox boundary. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/**
 * Checks a value against a schema. Returns a list of problems, each naming the path
 * (`row.answer: expected number, got string`); an empty list means valid.
 */
export function validateValue(schema: ValueSchema, value: unknown, path = 'value'): string[] {
  switch (schema.type) {
    case 'string':
      if (typeof value !== 'string') return [`${path}: expected string, got ${describe(value)}`];
      if (schema.enum && !schema.enum.includes(value)) return [`${path}: expected one of ${schema.enum.join(', ')}, got "${value}"`];
      return [];
    case 'number':
      if (typeof value !== 'number' || !Number.isFinite(value)) return [`${path}: expected a finite number, got ${describe(value)}`];
      if (schema.integer && !Number.isInteger(value)) return [`${path}: expected an integer, got ${value}`];
      if (schema.minimum !== undefined && value < schema.minimum) return [`${path}: ${value} is below the minimum ${schema.minimum}`];
      if (schema.maximum !== undefined && value > schema.maximum) return [`${path}: ${value} is above the maximum ${schema.maximum}`];
      return [];
    case 'boolean':
      return typeof value === 'boolean' ? [] : [`${path}: expected boolean, got ${describe(value)}`];
    case 'array':
      if (!Array.isArray(value)) return [`${path}: expected array, got ${describe(value)}`];
      return value.flatMap((item, i) => validateValue(schema.items, item, `${path}[${i}]`));
    case 'object': {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) return [`${path}: expected object, got ${describe(value)}`];
      const record = value as Record<string, unknown>;
      const required = schema.required ?? Object.keys(schema.properties);
      const problems: string[] = [];
      for (const key of required) if (!(key in record)) problems.push(`${path}.${key}: missing`);
      for (const [key, sub] of Object.entries(schema.properties)) {
        if (key in record && record[key] !== undefined) problems.push(...validateValue(sub, record[key], `${path}.${key}`));
      }
      return problems;
    }
  }
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value);
  return typeof value;
}

/** A one-line human description of a schema, used when tools are listed in a prompt. */
export function schemaToText(schema: ValueSchema): string {
  switch (schema.type) {
    case 'string':
      return schema.enum ? schema.enum.map((e) => JSON.stringify(e)).join(' | ') : 'string';
    case 'number':
      return schema.integer ? 'integer' : 'number';
    case 'boolean':
      return 'boolean';
    case 'array':
      return `${schemaToText(schema.items)}[]`;
    case 'object': {
      const required = schema.required ?? Object.keys(schema.properties);
      const fields = Object.entries(schema.properties).map(
        ([k, v]) => `${k}${required.includes(k) ? '' : '?'}: ${schemaToText(v)}`,
      );
      return `{ ${fields.join(', ')} }`;
    }
  }
}
