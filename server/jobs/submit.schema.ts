import { z } from 'zod';
import { PRIORITY_CAP } from '../scheduler/admission';

const jsonObject = z.record(z.string(), z.unknown());

/** What a job submission takes (the team comes from the procedure); inference.open queues through it too. */
export const submitInput = z.object({
  kind: z.enum(['TRAIN', 'SFT', 'INFERENCE', 'EVAL']),
  experimentId: z.string().min(1).max(64).optional(),
  priority: z.number().int().min(0).max(PRIORITY_CAP).default(0),
  deviceCount: z.number().int().min(1).max(64).default(1),
  deviceKind: z.enum(['CUDA', 'WEBGPU', 'CPU', 'WASM']).optional(),
  memoryBytes: z.number().int().min(0).max(2 ** 50).default(0),
  timeLimitSeconds: z.number().int().min(1).max(30 * 86400).optional(),
  maxAttempts: z.number().int().min(1).max(20).default(3),
  config: jsonObject,
});
export type SubmitInput = z.output<typeof submitInput>;
