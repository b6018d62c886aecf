/**
 * What every trainer shares: the variables it updates, Adam, the step counter, a seeded RNG
 * (shuffling, dropout) and the NaN guard. Each trainer (sft.ts, grpo.ts, ppo.ts) builds its loss
 * and calls `applyLoss`.
 */
import * as tf from '@tensorflow/tfjs';
import { NonFiniteLossError } from './errors';
import { type LanguageModel } from './model';
import { Adam, type OptimConfig, gradients, learningRateAt, sumOfSquares } from './optim';
import { type Reads, type Values } from './reads';
import { Rng, type RngState } from './rng';

/** One row of metrics per trainer step; fields that do not apply to an algorithm are null. */
export interface StepMetrics {
  step: number;
  loss: number;
  policyLoss: number | null;
  valueLoss: number | null;
  kl: number | null;
  entropy: number | null;
  clipFraction: number | null;
  gradNorm: number;
  learningRate: number;
  rewardMean: number | null;
  rewardStd: number | null;
  rewardMin: number | null;
  rewardMax: number | null;
  /** Trainable tokens processed per second (all epochs). */
  tokensPerSecond: number;
  stepTimeMs: number;
  /** Trainable tokens in the batch. */
  tokens: number;
  /** Optimiser updates made in this step (epochs × minibatches, minus skipped). */
  updates: number;
}

/** The trainer's part of a training checkpoint. */
export interface TrainerState {
  algorithm: string;
  step: number;
  optimizerStep: number;
  rng: RngState;
  config: unknown;
  moments: { m: Map<string, Float32Array>; v: Map<string, Float32Array> };
}

export class TrainerCore {
  readonly vars: Map<string, tf.Variable>;
  readonly adam: Adam;
  readonly rng: Rng;
  /** Trainer steps done (one per `step(batch)` call). */
  step = 0;
  /** Path of the last checkpoint saved, named when a NaN stops the run. */
  lastCheckpoint: string | null = null;

  constructor(
    readonly model: LanguageModel,
    readonly optim: OptimConfig,
    seed: number,
  ) {
    this.vars = model.trainableVariables();
    this.adam = new Adam(this.vars, optim);
    this.rng = new Rng(seed);
  }

  learningRate(): number {
    return learningRateAt(this.optim, this.adam.t);
  }

  /**
   * Differentiate `loss`, stop on a non-finite loss or gradient, else clip and apply Adam.
   * Tensors that `loss` keeps (tf.keep) are the caller's to dispose; `extra` (scalars, such as
   * those kept metrics) are read in the same read as the loss and the gradient norm (one wait for
   * the device per update on WebGPU), and their values returned in `extras`.
   */
  *applyLoss(loss: () => tf.Scalar, extra: () => tf.Tensor[] = () => []): Reads<{ loss: number; gradNorm: number; learningRate: number; extras: number[] }> {
    const lr = this.learningRate();
    const { value, grads } = gradients(loss, this.vars);
    const list = [...grads.values()];
    const sq = sumOfSquares(list);
    const packed = tf.tidy(() => tf.concat([value.reshape([1]), sq, ...extra().map((t) => t.reshape([1]))]));
    value.dispose();
    sq.dispose();
    let read: Values;
    try {
      read = yield packed;
    } catch (e) {
      list.forEach((g) => g.dispose());
      throw e;
    } finally {
      packed.dispose();
    }
    const [lossValue, sumSquares, ...extras] = read;
    if (!Number.isFinite(lossValue)) {
      list.forEach((g) => g.dispose());
      throw new NonFiniteLossError(this.step, this.lastCheckpoint);
    }
    const gradNorm = Math.sqrt(sumSquares);
    this.adam.apply(grads, lr, gradNorm);
    if (!Number.isFinite(gradNorm)) throw new NonFiniteLossError(this.step, this.lastCheckpoint, 'gradient norm');
    return { loss: lossValue, gradNorm, learningRate: lr, extras };
  }

  /** Adam's moments (checkpoints read them: `prefetch` before `exportState` on WebGPU). */
  momentTensors(): tf.Tensor[] {
    return [...this.adam.m.values(), ...this.adam.v.values()];
  }

  exportState(algorithm: string, config: unknown): TrainerState {
    const read = (m: Map<string, tf.Variable>) => new Map([...m].map(([k, t]) => [k, t.dataSync() as Float32Array]));
    return {
      algorithm,
      step: this.step,
      optimizerStep: this.adam.t,
      rng: this.rng.getState(),
      config,
      moments: { m: read(this.adam.m), v: read(this.adam.v) },
    };
  }

  importState(state: TrainerState): void {
    this.step = state.step;
    this.adam.t = state.optimizerStep;
    this.rng.setState(state.rng);
    for (const [kind, target] of [
      ['m', this.adam.m],
      ['v', this.adam.v],
    ] as const) {
      for (const [name, variable] of target) {
        const data = state.moments[kind].get(name);
        if (!data) throw new Error(`training state is missing optimiser moment ${kind} of "${name}"`);
        if (data.length !== variable.size) throw new Error(`optimiser moment ${kind} of "${name}" has ${data.length} values, expected ${variable.size}`);
        const t = tf.tensor(data, variable.shape);
        variable.assign(t);
        t.dispose();
      }
    }
  }

  dispose(): void {
    this.adam.dispose();
  }
}

export function rewardStats(returns: readonly number[]): Pick<StepMetrics, 'rewardMean' | 'rewardStd' | 'rewardMin' | 'rewardMax'> {
  const n = returns.length;
  const mean = returns.reduce((a, b) => a + b, 0) / n;
  const std = Math.sqrt(returns.reduce((a, r) => a + (r - mean) ** 2, 0) / n);
  return { rewardMean: mean, rewardStd: std, rewardMin: Math.min(...returns), rewardMax: Math.max(...returns) };
}

/** Split 0..n-1 into `parts` shuffled minibatches of near-equal size. */
export function minibatches(n: number, parts: number, rng: Rng): number[][] {
  const order = rng.shuffle(Array.from({ length: n }, (_, i) => i));
  const k = Math.min(parts, n);
  return Array.from({ length: k }, (_, p) => order.filter((_, i) => i % k === p));
}
