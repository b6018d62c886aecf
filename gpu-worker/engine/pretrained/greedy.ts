/**
 * Greedy decoding of a pretrained decoder for a batch of prompts of any lengths (left-padded, so
 * every row's next token is at the last column), by recomputing the whole sequence every step or
 * by feeding one token per row through the KV cache; the two must agree, which the tests check
 * against transformers' own greedy continuations. Sampling with temperature and top-p for these
 * models is the sampler's job (a later step of issue 19).
 */
import * as tf from '@tensorflow/tfjs';
import { type DecoderCache, type PretrainedDecoder } from './decoder';

export interface GreedyResult {
  /** The new token ids of each prompt. */
  tokens: number[][];
  /** Each prompt's last-position logits [V] at every step (for comparing the two paths). */
  stepLogits: Float32Array[][];
}

/** Fills the left padding; masked out of attention, so any valid id would do. */
const PAD_ID = 0;

export function greedyContinue(model: PretrainedDecoder, prompts: number[][], newTokens: number, opts: { kvCache: boolean }): GreedyResult {
  const B = prompts.length;
  const width = Math.max(...prompts.map((p) => p.length));
  const pads = prompts.map((p) => width - p.length);
  const rows = prompts.map((p, b) => [...new Array<number>(pads[b]).fill(PAD_ID), ...p]);
  // Position ids count real tokens only; padding columns get 0 (they are never attended to).
  const positionsOf = (from: number, to: number) => pads.map((pad) => Array.from({ length: to - from }, (_, j) => Math.max(0, from + j - pad)));
  const tokens: number[][] = prompts.map(() => []);
  const stepLogits: Float32Array[][] = prompts.map(() => []);
  let cache: DecoderCache | undefined;
  // Made once, not per step: for a tied head it is a transposed copy of the whole embedding.
  const head = model.config.tiedEmbeddings ? model.headWeights() : undefined;
  try {
    for (let s = 0; s < newTokens; s++) {
      const length = rows[0].length;
      const from = opts.kvCache && cache ? length - 1 : 0;
      const input = rows.map((r) => r.slice(from));
      const keyMask = pads.map((pad) => Array.from({ length }, (_, j) => (j < pad ? 0 : 1)));
      let next: DecoderCache | undefined;
      const logits = tf.tidy(() => {
        const r = model.forward(input, { positions: positionsOf(from, length), keyMask, lastOnly: true, cache, returnCache: opts.kvCache, head });
        // The new cache outlives this scope; everything else the step made is freed with it.
        if (r.cache) [...r.cache.keys, ...r.cache.values].forEach((t) => tf.keep(t));
        next = r.cache;
        return r.logits;
      });
      if (cache) [...cache.keys, ...cache.values].forEach((t) => t.dispose());
      cache = next;
      const all = logits.dataSync() as Float32Array;
      logits.dispose();
      const V = all.length / B;
      for (let b = 0; b < B; b++) {
        const row = all.slice(b * V, (b + 1) * V);
        stepLogits[b].push(row);
        const id = argmax(row);
        tokens[b].push(id);
        rows[b].push(id);
      }
    }
  } finally {
    head?.dispose();
    if (cache) [...cache.keys, ...cache.values].forEach((t) => t.dispose());
  }
  return { tokens, stepLogits };
}

function argmax(row: Float32Array): number {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i] > row[best]) best = i;
  return best;
}
