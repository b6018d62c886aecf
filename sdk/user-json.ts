/**
 * Zod schemas for JSON that user code produced (an environment's info, a match's moves and result),
 * which check a value and pass it on as it is. zod's `z.record` builds a new object key by key with
 * plain assignment, and assigning an own `"__proto__"` key sets the copy's prototype instead: the
 * key disappears from the data and its value is reachable through the prototype. JSON.parse keeps
 * such a key as an ordinary own property, and so do these schemas.
 */
import { z } from 'zod';
import type { Json } from './environment/schema';

/** Deeper than any JSON a person writes; a deeper value is refused rather than walked. */
const MAX_DEPTH = 1000;

/** An object literal's or JSON.parse's kind of object (not an array, a Date, a class instance). */
export function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v) as unknown;
  return proto === Object.prototype || proto === null;
}

/** True for what JSON.parse can return: null, booleans, finite numbers, strings, arrays and plain objects of them. Iterative: no stack to overflow. */
function isJson(value: unknown): value is Json {
  const pending: Array<[unknown, number]> = [[value, 0]];
  while (pending.length > 0) {
    const [v, depth] = pending.pop()!;
    if (v === null || typeof v === 'string' || typeof v === 'boolean') continue;
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) return false;
      continue;
    }
    if (depth >= MAX_DEPTH) return false;
    if (Array.isArray(v)) for (const item of v) pending.push([item, depth + 1]);
    else if (isPlainObject(v)) for (const key of Object.keys(v)) pending.push([v[key], depth + 1]);
    else return false;
  }
  return true;
}

/** Any JSON value, kept as given. */
export const jsonValueSchema = z.custom<Json>(isJson, { message: `expected a JSON value (finite numbers, at most ${MAX_DEPTH} levels deep)` });

/** A JSON object with any keys (its values unchecked), kept as given. */
export const userObjectSchema = z.custom<Record<string, unknown>>(isPlainObject, { message: 'expected an object' });

/** A JSON object of JSON values, kept as given. */
export const jsonObjectSchema = z.custom<Record<string, Json>>((v) => isPlainObject(v) && isJson(v), {
  message: `expected an object of JSON values (finite numbers, at most ${MAX_DEPTH} levels deep)`,
});
