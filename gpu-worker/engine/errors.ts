import { type z } from 'zod';

/** A configuration or input that cannot be used; `field` names the offending field. */
export class ConfigError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`invalid ${field}: ${message}`);
    this.name = 'ConfigError';
  }
}

/**
 * Fills an engine config's defaults and validates it with its schema (sdk/training-config.ts, the
 * one definition of every option); throws ConfigError naming the first bad field as `prefix.field`.
 */
export function parseEngineConfig<S extends z.ZodType>(schema: S, partial: unknown, prefix: string): z.output<S> {
  const parsed = schema.safeParse(partial);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  if (issue.code === 'unrecognized_keys') throw new ConfigError(`${prefix}.${issue.keys[0]}`, 'unknown field');
  throw new ConfigError([prefix, ...issue.path.map(String)].join('.'), issue.message);
}

/** A checkpoint file that cannot be read; the message says what is wrong and where. */
export class CheckpointError extends Error {
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(`checkpoint ${path}: ${message}`);
    this.name = 'CheckpointError';
  }
}

/** Training produced a non-finite loss; names the step (counted from 1, as logs count them) and the last good checkpoint. */
export class NonFiniteLossError extends Error {
  constructor(
    /** Trainer steps done before the one that failed. */
    readonly step: number,
    readonly lastGoodCheckpoint: string | null,
    readonly what = 'loss',
  ) {
    super(
      `${what} became NaN or infinite in step ${step + 1}; training stopped. ` +
        (lastGoodCheckpoint ? `Last good checkpoint: ${lastGoodCheckpoint}` : 'No checkpoint was saved before this step.'),
    );
    this.name = 'NonFiniteLossError';
  }
}

export function requireInt(field: string, value: unknown, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(field, `must be an integer in [${min}, ${max}], got ${String(value)}`);
  }
  return value;
}

export function requireNumber(field: string, value: unknown, min = -Infinity, max = Infinity): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) {
    throw new ConfigError(field, `must be a finite number in [${min}, ${max}], got ${String(value)}`);
  }
  return value;
}
