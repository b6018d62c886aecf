/**
 * The host's checks of what comes out of the sandbox. The driver checks first and gives precise
 * messages; these checks hold even if user code has tampered with the driver or with JSON.
 */
import { z } from 'zod';
import { type DriverMethod, type DriverMethods } from './protocol';
import { jsonObjectSchema, jsonValueSchema } from '../../../sdk/user-json';

const turn = z.object({ agent: z.string(), observation: z.string(), actions: z.array(z.string().min(1)).min(1).optional() });
const valueSchema: z.ZodType<unknown> = z.lazy(() => z.object({ type: z.string() }).loose());
const objectSchema = z.object({ type: z.literal('object'), properties: z.record(z.string(), valueSchema) }).loose();

const responses: { [M in DriverMethod]: z.ZodType<DriverMethods[M]['response']> } = {
  describe: z.object({
    kind: z.enum(['single-turn', 'multi-turn', 'multi-agent']),
    name: z.string(),
    description: z.string(),
    agents: z.array(z.string()).min(1),
    context: z.enum(['full', 'latest']),
    rowSchema: objectSchema.nullable(),
    tools: z.array(z.object({ name: z.string(), description: z.string(), parameters: objectSchema })),
    toolPrompt: z.string(),
    bots: z.array(z.string()),
    symmetries: z.boolean().optional(),
    definedAt: z.string(),
  }) as z.ZodType<DriverMethods['describe']['response']>,
  reset: z.object({ turn, systemPrompts: z.record(z.string(), z.string()), task: jsonValueSchema }) as z.ZodType<DriverMethods['reset']['response']>,
  step: z.object({
    rewards: z.record(z.string(), z.number().refine(Number.isFinite, 'rewards must be finite')),
    terminated: z.boolean(),
    truncated: z.boolean(),
    // User data, kept as it came: an own "__proto__" key stays a key (sdk/user-json.ts).
    info: jsonObjectSchema,
    next: turn.nullable(),
    tool: z.object({ name: z.string().nullable(), ok: z.boolean(), error: z.string().optional() }).nullable(),
  }) as z.ZodType<DriverMethods['step']['response']>,
  bot: z.object({ action: z.string() }),
  close: z.object({ open: z.number() }),
  symmetries: z.object({ turns: z.array(z.array(z.object({ observation: z.string(), action: z.string() })).min(1)) }),
  tests: z.object({ cases: z.array(jsonValueSchema) }) as z.ZodType<DriverMethods['tests']['response']>,
};

export function validateResponse<M extends DriverMethod>(method: M, value: unknown): { ok: true; value: DriverMethods[M]['response'] } | { ok: false; problem: string } {
  const result = responses[method].safeParse(value);
  if (result.success) return { ok: true, value: result.data };
  return { ok: false, problem: result.error.issues.map((i) => `${i.path.join('.') || '(response)'}: ${i.message}`).join('; ') };
}
