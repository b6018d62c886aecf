import { createHash } from 'node:crypto';

/** JSON with object keys sorted, so equal content always hashes equal. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

export function environmentContentHash(content: { entry: string; files: Record<string, string>; manifest: unknown }): string {
  return createHash('sha256').update(canonicalJson(content)).digest('hex');
}
