/**
 * Emits the JSON Schema of `manifest.json` from the zod schemas (sdk/manifest.ts and
 * sdk/training-config.ts), for the editor's validation and completion of manifests. Run:
 * `npx tsx sdk/emit-manifest-schema.ts` (a test fails when the committed file is stale).
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { manifestSchema } from './manifest';
import { ALGORITHMS, grpoTrainingSchema, ppoTrainingSchema, sftTrainingSchema } from './training-config';

export const MANIFEST_SCHEMA_PATH = fileURLToPath(new URL('./manifest.schema.json', import.meta.url));

type JsonSchema = { properties?: Record<string, JsonSchema>; default?: unknown; description?: string; [key: string]: unknown };

const toJson = (schema: z.ZodType) => z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;

/**
 * The manifest's `training` takes the options of the algorithm it names; one object schema lists
 * them all, each saying which algorithms read it and, where they differ, each one's default.
 */
function trainingJsonSchema(): JsonSchema {
  const variants = { grpo: toJson(grpoTrainingSchema), ppo: toJson(ppoTrainingSchema), sft: toJson(sftTrainingSchema) };
  const properties: Record<string, JsonSchema> = {};
  const owners: Record<string, string[]> = {};
  for (const algorithm of ALGORITHMS) {
    for (const [name, property] of Object.entries(variants[algorithm].properties ?? {})) {
      if (name === 'algorithm') continue;
      properties[name] ??= property;
      (owners[name] ??= []).push(algorithm);
    }
  }
  for (const [name, property] of Object.entries(properties)) {
    const by = owners[name];
    const defaults = by.map((a) => variants[a as keyof typeof variants].properties![name].default);
    const notes: string[] = [];
    if (by.length < ALGORITHMS.length) notes.push(`Only for ${by.join(' and ')}.`);
    if (new Set(defaults.map((d) => JSON.stringify(d))).size > 1) {
      delete property.default;
      notes.push(`Default: ${by.map((a, i) => `${a} ${JSON.stringify(defaults[i])}`).join(', ')}.`);
    }
    if (notes.length > 0) properties[name] = { ...property, description: `${property.description ?? ''} ${notes.join(' ')}`.trim() };
  }
  return {
    type: 'object',
    description: 'Training options (sdk/training-config.ts): any subset; the rest take their documented defaults. A job and `--set` override them.',
    properties: { algorithm: { type: 'string', enum: [...ALGORITHMS], default: 'grpo', description: 'grpo, ppo, or sft (supervised, on a dataset).' }, ...properties },
    additionalProperties: false,
  };
}

export function generateManifestJsonSchema(): string {
  const schema = toJson(manifestSchema);
  schema.properties!.training = trainingJsonSchema();
  const document = { $schema: 'https://json-schema.org/draft/2020-12/schema', title: 'Whetstone environment manifest (manifest.json)', ...schema };
  return `${JSON.stringify(document, null, 2)}\n`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(MANIFEST_SCHEMA_PATH, generateManifestJsonSchema());
  console.log(`wrote ${MANIFEST_SCHEMA_PATH}`);
}
