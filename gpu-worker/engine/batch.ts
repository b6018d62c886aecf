/**
 * The training input every trainer takes: token sequences with a loss mask (1 for tokens the
 * policy wrote, 0 for prompt and environment tokens) and rewards, either one number (placed on the
 * last trainable token) or one per token (so multi-turn rollouts keep per-turn rewards).
 */
import { ConfigError } from './errors';

export interface Sequence {
  tokens: number[];
  lossMask: number[];
  /** A final reward (on the last trainable token) or one reward per token. Ignored by SFT. */
  rewards?: number | number[];
  /** GRPO: sequences with the same group share a prompt. */
  group?: number | string;
  /** PPO: the episode was cut off by a limit rather than ending, so its value is bootstrapped. */
  truncated?: boolean;
}

/** Right-padded, shifted arrays: the model reads `inputs` and predicts `targets`. */
export interface PreparedBatch {
  inputs: number[][];
  targets: number[];
  /** 1 where the target token is trainable; [B·(T-1)] flattened like the logits. */
  mask: number[];
  /** B and T-1. */
  rows: number;
  cols: number;
  trainableTokens: number;
}

export function validateBatch(
  batch: readonly Sequence[],
  opts: { contextLength: number; vocabSize: number; needRewards: boolean; needGroups?: boolean },
): void {
  if (!Array.isArray(batch) || batch.length === 0) throw new ConfigError('batch', 'must contain at least one sequence');
  let trainable = 0;
  batch.forEach((s, i) => {
    const f = `batch[${i}]`;
    if (!Array.isArray(s.tokens) || s.tokens.length < 2) throw new ConfigError(`${f}.tokens`, 'needs at least 2 tokens');
    if (s.tokens.length > opts.contextLength) {
      throw new ConfigError(`${f}.tokens`, `has ${s.tokens.length} tokens, more than model.contextLength ${opts.contextLength}`);
    }
    s.tokens.forEach((t: number, j: number) => {
      if (!Number.isInteger(t) || t < 0 || t >= opts.vocabSize) {
        throw new ConfigError(`${f}.tokens[${j}]`, `must be a token id in [0, ${opts.vocabSize}), got ${t}`);
      }
    });
    if (!Array.isArray(s.lossMask) || s.lossMask.length !== s.tokens.length) {
      throw new ConfigError(`${f}.lossMask`, `must have one entry per token (${s.tokens.length})`);
    }
    s.lossMask.forEach((m: number, j: number) => {
      if (m !== 0 && m !== 1) throw new ConfigError(`${f}.lossMask[${j}]`, `must be 0 or 1, got ${m}`);
    });
    if (s.lossMask[0] === 1) throw new ConfigError(`${f}.lossMask[0]`, 'the first token has no prediction and cannot be trainable');
    trainable += s.lossMask.reduce((a: number, b: number) => a + b, 0);
    if (opts.needRewards) {
      if (s.rewards === undefined) throw new ConfigError(`${f}.rewards`, 'is required');
      if (typeof s.rewards === 'number') {
        if (!Number.isFinite(s.rewards)) throw new ConfigError(`${f}.rewards`, `must be finite, got ${s.rewards}`);
      } else {
        if (s.rewards.length !== s.tokens.length) throw new ConfigError(`${f}.rewards`, `must have one entry per token (${s.tokens.length})`);
        s.rewards.forEach((r: number, j: number) => {
          if (!Number.isFinite(r)) throw new ConfigError(`${f}.rewards[${j}]`, `must be finite, got ${r}`);
        });
      }
    }
    if (opts.needGroups && s.group === undefined) throw new ConfigError(`${f}.group`, 'is required (sequences sharing a prompt share a group)');
  });
  if (trainable === 0) throw new ConfigError('batch', 'has no trainable tokens (every lossMask is 0)');
}

/**
 * Right-pad and shift. With `full`, inputs keep the last token too (cols = T), so a value head can
 * read the state after the final token (PPO's bootstrap); that last column has no target.
 */
export function prepareBatch(batch: readonly Sequence[], pad: number, full = false): PreparedBatch {
  const T = Math.max(...batch.map((s) => s.tokens.length));
  const cols = full ? T : T - 1;
  const inputs: number[][] = [];
  const targets: number[] = [];
  const mask: number[] = [];
  let trainableTokens = 0;
  for (const s of batch) {
    const row = new Array<number>(cols).fill(pad);
    for (let t = 0; t < cols; t++) {
      if (t < s.tokens.length) row[t] = s.tokens[t];
      const inside = t + 1 < s.tokens.length;
      targets.push(inside ? s.tokens[t + 1] : pad);
      const m = inside ? s.lossMask[t + 1] : 0;
      mask.push(m);
      trainableTokens += m;
    }
    inputs.push(row);
  }
  return { inputs, targets, mask, rows: batch.length, cols, trainableTokens };
}

/** Per-token rewards of a sequence: a final reward goes on the last trainable token. */
export function tokenRewards(s: Sequence): number[] {
  if (Array.isArray(s.rewards)) return s.rewards.slice();
  const out = new Array<number>(s.tokens.length).fill(0);
  const last = s.lossMask.lastIndexOf(1);
  if (last >= 0) out[last] = s.rewards ?? 0;
  return out;
}

/** The sequence's return: the sum of its rewards. */
export function sequenceReturn(s: Sequence): number {
  return tokenRewards(s).reduce((a, b) => a + b, 0);
}

/** Rows `rows` of a prepared batch plus per-token arrays aligned with it ([B·cols] flattened). */
export function selectRows(b: PreparedBatch, rows: readonly number[], perToken: Record<string, ArrayLike<number>>) {
  const cols = b.cols;
  const pick = (a: ArrayLike<number>) => {
    const out = new Float32Array(rows.length * cols);
    rows.forEach((r, i) => {
      for (let t = 0; t < cols; t++) out[i * cols + t] = a[r * cols + t];
    });
    return out;
  };
  const extra: Record<string, Float32Array> = {};
  for (const [k, a] of Object.entries(perToken)) extra[k] = pick(a);
  return {
    inputs: rows.map((r) => b.inputs[r]),
    targets: Int32Array.from(pick(b.targets)),
    mask: pick(b.mask),
    rows: rows.length,
    extra,
  };
}
