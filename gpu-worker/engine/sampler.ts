/**
 * Batched autoregressive sampling. Prompts of different lengths are left-padded into one batch;
 * padding is masked out of attention and positions count from each prompt's first real token, so
 * a row's output does not depend on the other rows. With the KV cache the prompt is run once
 * (prefill) and then one token per step; without it the whole prefix is recomputed each step.
 * Both paths call the same forward function, so greedy outputs agree.
 */
import * as tf from '@tensorflow/tfjs';
import { ConfigError, requireInt, requireNumber } from './errors';
import { type KvCache, type LanguageModel } from './model';
import { heapViews, nativeKernels } from './native';
import { type Reads, readAndDispose, readAsync, readSync } from './reads';
import { Rng } from './rng';
import { type Tokenizer } from './tokenizer';

export interface SampleOptions {
  /** Most new tokens per row. Default 64; also capped by the model's context length. */
  maxTokens: number;
  /** Softmax temperature; 0 means greedy (argmax). Default 1. */
  temperature: number;
  /** Keep only the k most likely tokens; 0 disables. Default 0. */
  topK: number;
  /** Nucleus sampling: keep the smallest set with probability ≥ topP; 1 disables. Default 1. */
  topP: number;
  /** Stop a row when its text contains one of these; the stop string is kept in the output. */
  stop: string[];
  /** Stop a row at the tokenizer's EOS token (kept in `tokens`, not in `text`). Default true. */
  stopAtEos: boolean;
  /** Use the KV cache (default true); false recomputes the prefix each step (tests, benchmarks). */
  useCache: boolean;
  /** Seed for the sampling stream when no `rng` is given. Default 0. */
  seed: number;
  /**
   * Per row, the token sequences its completion must be one of (an environment's legal actions),
   * or null for free text. A constrained row picks only tokens that continue one of them and ends
   * as soon as it has written one whole (finish reason `stop`), without EOS. Its log-probabilities
   * are those of the unconstrained policy, the distribution the trainer differentiates, so the
   * importance ratio of a policy-gradient step compares like with like. top-k and top-p do not
   * apply to constrained rows.
   */
  allowed?: readonly (readonly (readonly number[])[] | null)[];
}

const SAMPLE_DEFAULTS: SampleOptions = {
  maxTokens: 64,
  temperature: 1,
  topK: 0,
  topP: 1,
  stop: [],
  stopAtEos: true,
  useCache: true,
  seed: 0,
};

export type FinishReason = 'eos' | 'stop' | 'length';

export interface SampleResult {
  /** The generated token ids (not the prompt). */
  tokens: number[];
  /** Decoded text of `tokens`, cut just after the stop string if one matched. */
  text: string;
  /** Log-probability of each generated token under the temperature-scaled policy (temperature 1 when greedy), before top-k/top-p truncation. */
  logprobs: number[];
  finishReason: FinishReason;
  /** The stop string that ended the row, if any. */
  stop?: string;
}

/**
 * Padding and BOS only ever come from the caller: the policy never writes them, unless the model
 * pads with its end-of-turn token (as Llama 3 does, having no padding token of its own).
 */
export function neverSampled(tokenizer: Tokenizer): Set<number> {
  const out = new Set([tokenizer.pad, tokenizer.bos]);
  out.delete(tokenizer.eos);
  return out;
}

export function resolveSampleOptions(partial: Partial<SampleOptions> = {}): SampleOptions {
  const o = { ...SAMPLE_DEFAULTS, ...partial };
  requireInt('sample.maxTokens', o.maxTokens, 1);
  requireNumber('sample.temperature', o.temperature, 0);
  requireInt('sample.topK', o.topK, 0);
  requireNumber('sample.topP', o.topP, Number.MIN_VALUE, 1);
  if (!Array.isArray(o.stop) || o.stop.some((s) => typeof s !== 'string' || s.length === 0)) {
    throw new ConfigError('sample.stop', 'must be an array of non-empty strings');
  }
  if (o.allowed?.some((row) => row !== null && (row.length === 0 || row.some((seq) => seq.length === 0)))) {
    throw new ConfigError('sample.allowed', 'each row must be null or a non-empty list of non-empty token sequences');
  }
  return o;
}

/**
 * Generate a completion for every prompt. Runs without gradients and disposes every tensor it
 * makes. Synchronous: wasm and cpu only; `sampleAsync` runs on every backend.
 */
export function sample(
  model: LanguageModel,
  tokenizer: Tokenizer,
  prompts: readonly (readonly number[])[],
  options: Partial<SampleOptions> = {},
  rng?: Rng,
): SampleResult[] {
  return readSync(sampling(model, tokenizer, prompts, options, rng));
}

/** `sample`, reading each step's logits without blocking (WebGPU needs this). */
export function sampleAsync(
  model: LanguageModel,
  tokenizer: Tokenizer,
  prompts: readonly (readonly number[])[],
  options: Partial<SampleOptions> = {},
  rng?: Rng,
): Promise<SampleResult[]> {
  return readAsync(sampling(model, tokenizer, prompts, options, rng));
}

function* sampling(
  model: LanguageModel,
  tokenizer: Tokenizer,
  prompts: readonly (readonly number[])[],
  options: Partial<SampleOptions> = {},
  rng?: Rng,
): Reads<SampleResult[]> {
  const o = resolveSampleOptions(options);
  if (prompts.length === 0) throw new ConfigError('prompts', 'must not be empty');
  prompts.forEach((p, i) => {
    if (p.length === 0) throw new ConfigError(`prompts[${i}]`, 'must have at least one token (e.g. BOS)');
  });
  const random = rng ?? new Rng(o.seed);
  if (o.allowed && o.allowed.length !== prompts.length) throw new ConfigError('sample.allowed', `has ${o.allowed.length} rows for ${prompts.length} prompts`);
  // A constrained row's candidates: the allowed sequences its tokens so far are a prefix of.
  const candidates = prompts.map((_, b) => o.allowed?.[b] ?? null);
  const ctx = model.contextLength;
  const B = prompts.length;
  const L = Math.max(...prompts.map((p) => p.length));
  const budget = Math.min(o.maxTokens, ctx - L);
  if (budget <= 0) {
    throw new ConfigError('prompts', `longest prompt has ${L} tokens, leaving no room in model.contextLength ${ctx}`);
  }

  // Left-pad: row b has pad[b] padding tokens, then its prompt.
  const pad = prompts.map((p) => L - p.length);
  const seqs = prompts.map((p, b) => [...new Array<number>(pad[b]).fill(tokenizer.pad), ...p]);
  const keyMask = seqs.map((row, b) => row.map((_, j) => (j < pad[b] ? 0 : 1)));
  const positionOf = (b: number, j: number) => Math.max(0, j - pad[b]);

  const results: SampleResult[] = prompts.map(() => ({ tokens: [], text: '', logprobs: [], finishReason: 'length' }));
  const done = new Array<boolean>(B).fill(false);
  let cache: KvCache | null = null;
  const banned = neverSampled(tokenizer);
  // Token choice natively (the same choice by the same arithmetic) where it applies: the native
  // kernels on, no per-row constraint, no top-k or top-p cut.
  const native = !o.allowed && (o.temperature === 0 || (o.topK === 0 && o.topP >= 1)) ? nativeKernels() : null;
  // Which tokens may be chosen, built once per call for the native choice (the vocabulary is fixed).
  const allowed = native ? allowedMask(model.vocabSize, banned) : null;

  // A tied head is transposed once per call rather than once per step (no gradients flow here).
  const head = model.tiedHead ? model.headWeights() : undefined;
  try {
    for (let step = 0; step < budget; step++) {
      let logitsT: tf.Tensor;
      if (o.useCache) {
        const first = cache === null;
        const input = first ? seqs : seqs.map((row) => [row[row.length - 1]]);
        const start = first ? 0 : seqs[0].length - 1;
        const positions = input.map((row, b) => row.map((_, j) => positionOf(b, start + j)));
        const prev: KvCache | null = cache;
        const out = tf.tidy(() => {
          const r = model.forward(input, {
            positions,
            keyMask,
            cache: prev ?? undefined,
            returnCache: true,
            // Every position this call will feed (the last new token is never fed back), so that
            // decoding steps write into the cache in place instead of copying it each step.
            cacheCapacity: L + budget - 1,
            head,
            lastOnly: true,
          });
          return { logits: r.logits, keys: r.cache!.keys, values: r.cache!.values };
        });
        if (prev) disposeCache(prev, out);
        cache = { keys: out.keys, values: out.values, length: seqs[0].length };
        logitsT = out.logits;
      } else {
        const positions = seqs.map((row, b) => row.map((_, j) => positionOf(b, j)));
        logitsT = tf.tidy(() => model.forward(seqs, { positions, keyMask, head, lastOnly: true }).logits);
      }

      let choose: (b: number, only?: ReadonlySet<number>) => { token: number; logprob: number };
      if (native) {
        const chosen = chooseNatively(native, logitsT, o.temperature, allowed!, done, random);
        choose = (b) => ({ token: chosen.tokens[b], logprob: chosen.logprobs[b] });
      } else {
        const logits = (yield* readAndDispose(logitsT)) as Float32Array;
        const V = logits.length / B;
        choose = (b, only) => chooseToken(logits.subarray(b * V, (b + 1) * V), o, banned, random, only);
      }
      for (let b = 0; b < B; b++) {
        const live = candidates[b];
        const position = results[b].tokens.length;
        const only = live && !done[b] ? new Set(live.map((seq) => seq[position])) : undefined;
        const { token, logprob } = done[b] ? { token: tokenizer.pad, logprob: 0 } : choose(b, only);
        seqs[b].push(token);
        keyMask[b].push(1);
        if (done[b]) continue;
        const r = results[b];
        r.tokens.push(token);
        r.logprobs.push(logprob);
        if (live) {
          const next = live.filter((seq) => seq[position] === token);
          candidates[b] = next;
          if (next.some((seq) => seq.length === position + 1)) {
            r.finishReason = 'stop';
            done[b] = true;
          }
          continue;
        }
        if (o.stopAtEos && token === tokenizer.eos) {
          r.finishReason = 'eos';
          done[b] = true;
          continue;
        }
        // Without stop strings the text is only needed at the end (decoded once, below).
        if (o.stop.length === 0) continue;
        const before = r.text.length;
        r.text = tokenizer.decode(r.tokens);
        for (const s of o.stop) {
          const at = r.text.indexOf(s, Math.max(0, before - s.length + 1));
          if (at >= 0) {
            r.text = r.text.slice(0, at + s.length);
            r.finishReason = 'stop';
            r.stop = s;
            done[b] = true;
            break;
          }
        }
      }
      if (done.every(Boolean)) break;
    }
  } finally {
    if (cache) disposeCache(cache);
    head?.dispose();
  }
  // Rows ended by a stop string have their text already; the rest (constrained rows too) are decoded here.
  for (const r of results) if (r.stop === undefined) r.text = tokenizer.decode(r.tokens);
  return results;
}

/**
 * Every unfinished row's token and log-probability, chosen natively from `logits` [B, V] where they
 * lie on the wasm heap (no copy out of it), drawing from `rng` exactly as `chooseToken` would; the
 * logits are disposed.
 */
function chooseNatively(
  native: NonNullable<ReturnType<typeof nativeKernels>>,
  logits: tf.Tensor,
  temperature: number,
  allowed: Uint8Array,
  done: readonly boolean[],
  rng: Rng,
): { tokens: Int32Array; logprobs: Float64Array } {
  const [B, V] = logits.shape;
  const live = Uint8Array.from(done, (d) => (d ? 0 : 1));
  const state = Uint32Array.from(rng.getState());
  const tokens = new Int32Array(B);
  const logprobs = new Float64Array(B);
  try {
    // The heap view is taken last: nothing may allocate on the heap between it and the call.
    native.chooseTokens(heapViews([logits])[0], B, V, temperature, allowed, live, state, tokens, logprobs);
  } finally {
    logits.dispose();
  }
  rng.setState([state[0], state[1], state[2], state[3]]);
  return { tokens, logprobs };
}

/** 1 for each of the V tokens that may be sampled, 0 for the banned ones. */
function allowedMask(V: number, banned: ReadonlySet<number>): Uint8Array {
  const allowed = new Uint8Array(V).fill(1);
  for (const b of banned) if (b >= 0 && b < V) allowed[b] = 0;
  return allowed;
}

/** Dispose a cache's tensors, except those that `kept` (a cache extended in place) still holds. */
function disposeCache(cache: KvCache, kept?: Pick<KvCache, 'keys' | 'values'>): void {
  const keep = new Set([...(kept?.keys ?? []), ...(kept?.values ?? [])]);
  for (const t of [...cache.keys, ...cache.values]) if (!keep.has(t)) t.dispose();
}

/**
 * The `k` likeliest tokens of a row of logits at the sampling temperature, with their
 * log-probabilities under the same distribution `chooseToken` reports (banned tokens excluded):
 * what a playground shows on hovering a token. O(V·k), fine for k ≤ 10.
 */
export function likeliestTokens(logits: Float32Array, temperature: number, banned: ReadonlySet<number>, k: number): Array<{ token: number; logprob: number }> {
  const t = temperature === 0 ? 1 : temperature;
  let max = -Infinity;
  for (let i = 0; i < logits.length; i++) if (!banned.has(i) && logits[i] / t > max) max = logits[i] / t;
  let z = 0;
  for (let i = 0; i < logits.length; i++) if (!banned.has(i)) z += Math.exp(logits[i] / t - max);
  const logZ = Math.log(z) + max;
  const best: number[] = [];
  for (let i = 0; i < logits.length; i++) {
    if (banned.has(i)) continue;
    if (best.length < k) best.push(i);
    else if (logits[i] > logits[best[best.length - 1]]) best[best.length - 1] = i;
    else continue;
    best.sort((a, b) => logits[b] - logits[a]);
  }
  return best.map((token) => ({ token, logprob: logits[token] / t - logZ }));
}

// Scratch for chooseToken, grown to the vocabulary once instead of four arrays per row per step.
let scratchE = new Float64Array(0);
let scratchAllowed = new Uint8Array(0);

/** Pick one token from a row of logits; returns it with its log-probability. */
export function chooseToken(
  logits: Float32Array,
  o: Pick<SampleOptions, 'temperature' | 'topK' | 'topP'>,
  banned: ReadonlySet<number>,
  rng: Rng,
  /** When given, pick only among these tokens; the log-probability stays the unrestricted one. */
  only?: ReadonlySet<number>,
): { token: number; logprob: number } {
  // Called for every row at every step (it was ~15% of cached sampling's time): no per-element Set
  // lookups or allocations, each exponential computed once, log-probabilities only where needed.
  // The arithmetic (and so every choice and log-probability) is that of the plain definition.
  const V = logits.length;
  const t = o.temperature === 0 ? 1 : o.temperature;
  if (scratchE.length < V) {
    scratchE = new Float64Array(V);
    scratchAllowed = new Uint8Array(V);
  }
  const e = scratchE;
  const allowed = scratchAllowed;
  allowed.fill(1, 0, V);
  for (const b of banned) if (b >= 0 && b < V) allowed[b] = 0;
  let max = -Infinity;
  for (let i = 0; i < V; i++) {
    const s = logits[i] / t;
    if (allowed[i] && s > max) max = s;
  }
  // e[i] = exp(scaled − max) serves both the normaliser and, divided by z, the probabilities.
  let z = 0;
  for (let i = 0; i < V; i++) {
    e[i] = allowed[i] ? Math.exp(logits[i] / t - max) : 0;
    z += e[i];
  }
  const logZ = Math.log(z) + max;
  const logp = (i: number) => (allowed[i] ? logits[i] / t - logZ : -Infinity);

  if (only) {
    // Constrained: greedy takes the likeliest permitted token, sampling draws in proportion to the
    // permitted tokens' probabilities (renormalised among them).
    const permitted = [...only].filter((i) => i >= 0 && i < V && allowed[i]);
    if (permitted.length === 0) throw new ConfigError('sample.allowed', 'no permitted token left (an allowed sequence uses a banned token)');
    if (o.temperature === 0) {
      const best = permitted.reduce((a, i) => (logits[i] > logits[a] ? i : a));
      return { token: best, logprob: logp(best) };
    }
    // Weights relative to the likeliest permitted token, so that they cannot all underflow.
    const top = Math.max(...permitted.map((i) => logits[i] / t));
    const weights = permitted.map((i) => Math.exp(logits[i] / t - top));
    let u = rng.next() * weights.reduce((a, w) => a + w, 0);
    for (let k = 0; k < permitted.length; k++) {
      u -= weights[k];
      if (u <= 0) return { token: permitted[k], logprob: logp(permitted[k]) };
    }
    const last = permitted[permitted.length - 1];
    return { token: last, logprob: logp(last) };
  }

  if (o.temperature === 0) {
    let best = 0;
    let bestLogp = logp(0);
    for (let i = 1; i < V; i++) {
      const lp = logp(i);
      if (lp > bestLogp) {
        best = i;
        bestLogp = lp;
      }
    }
    return { token: best, logprob: bestLogp };
  }
  if (o.topK === 0 && o.topP >= 1) {
    // Every allowed token, in index order.
    let total = 0;
    let last = -1;
    for (let i = 0; i < V; i++) {
      if (!allowed[i]) continue;
      total += e[i] / z;
      last = i;
    }
    let u = rng.next() * total;
    for (let i = 0; i < V; i++) {
      if (!allowed[i]) continue;
      u -= e[i] / z;
      if (u <= 0) return { token: i, logprob: logp(i) };
    }
    return { token: last, logprob: logp(last) };
  }
  let candidates: number[] = [];
  for (let i = 0; i < V; i++) if (allowed[i]) candidates.push(i);
  const lps = new Float64Array(V);
  for (let i = 0; i < V; i++) lps[i] = logp(i);
  candidates.sort((a, b) => lps[b] - lps[a]);
  if (o.topK > 0) candidates = candidates.slice(0, o.topK);
  if (o.topP < 1) {
    let mass = 0;
    let keep = 0;
    while (keep < candidates.length && mass < o.topP) mass += Math.exp(lps[candidates[keep++]]);
    candidates = candidates.slice(0, Math.max(1, keep));
  }
  const p = new Float64Array(candidates.length);
  let total = 0;
  for (let k = 0; k < candidates.length; k++) {
    p[k] = e[candidates[k]] / z;
    total += p[k];
  }
  let u = rng.next() * total;
  for (let k = 0; k < candidates.length; k++) {
    u -= p[k];
    if (u <= 0) return { token: candidates[k], logprob: lps[candidates[k]] };
  }
  const last = candidates[candidates.length - 1];
  return { token: last, logprob: lps[last] };
}
