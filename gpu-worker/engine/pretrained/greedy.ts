/**
 * Greedy decoding of a pretrained decoder, by recomputing the whole sequence every step or by
 * feeding one token at a time through the KV cache; the two must agree, which the tests check
 * against transformers' own greedy continuations. Batched sampling with temperature and top-p for
 * these models is the sampler's job (a later step of issue 19).
 */
import * as tf from '@tensorflow/tfjs';
import { type DecoderCache, type PretrainedDecoder } from './decoder';

export interface GreedyResult {
  /** The new token ids. */
  tokens: number[];
  /** Each step's last-position logits [V] (for comparing the two paths). */
  stepLogits: Float32Array[];
}

export function greedyContinue(model: PretrainedDecoder, prompt: number[], newTokens: number, opts: { kvCache: boolean }): GreedyResult {
  const tokens: number[] = [];
  const stepLogits: Float32Array[] = [];
  let cache: DecoderCache | undefined;
  try {
    for (let s = 0; s < newTokens; s++) {
      const input = opts.kvCache && cache ? [tokens.slice(-1)] : [[...prompt, ...tokens]];
      let next: DecoderCache | undefined;
      const logits = tf.tidy(() => {
        const r = model.forward(input, { lastOnly: true, cache, returnCache: opts.kvCache });
        // The new cache outlives this scope; everything else the step made is freed with it.
        if (r.cache) [...r.cache.keys, ...r.cache.values].forEach((t) => tf.keep(t));
        next = r.cache;
        return r.logits;
      });
      if (cache) [...cache.keys, ...cache.values].forEach((t) => t.dispose());
      cache = next;
      const row = logits.dataSync() as Float32Array;
      logits.dispose();
      stepLogits.push(row);
      tokens.push(argmax(row));
    }
  } finally {
    if (cache) [...cache.keys, ...cache.values].forEach((t) => t.dispose());
  }
  return { tokens, stepLogits };
}

function argmax(row: Float32Array): number {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i] > row[best]) best = i;
  return best;
}
