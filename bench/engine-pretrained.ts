/**
 * bench:engine's pretrained-model figures: a decoder in the shapes of SmolLM2-135M (its published
 * config.json) with random weights, sampled with and without the KV cache and trained with LoRA.
 */
import * as tf from '@tensorflow/tfjs';
import { type Sequence } from '../gpu-worker/engine/batch';
import { attachLora } from '../gpu-worker/engine/lora';
import { PretrainedDecoder, expectedTensors } from '../gpu-worker/engine/pretrained/decoder';
import { type DecoderConfig, parseDecoderConfig } from '../gpu-worker/engine/pretrained/hf-config';
import { Rng } from '../gpu-worker/engine/rng';
import { sampleAsync } from '../gpu-worker/engine/sampler';
import { SFTTrainer } from '../gpu-worker/engine/sft';
import { CharTokenizer } from '../gpu-worker/engine/tokenizer';
import { emit, timeMs } from './engine-measure';

/** SmolLM2-135M's config.json, the fields that shape the model. */
export const SMOLLM2_135M = {
  model_type: 'llama',
  hidden_size: 576,
  intermediate_size: 1536,
  num_hidden_layers: 30,
  num_attention_heads: 9,
  num_key_value_heads: 3,
  vocab_size: 49152,
  rope_theta: 100000,
  max_position_embeddings: 8192,
  tie_word_embeddings: true,
  rms_norm_eps: 1e-5,
};

/** Random weights in the engine's layout (projections [in, out]): N(0, 0.02), norms at 1. */
export function randomDecoder(c: DecoderConfig, contextLength: number): PretrainedDecoder {
  const weights = new Map<string, tf.Tensor>();
  let seed = 1;
  for (const [name, shape] of expectedTensors(c)) {
    const engine = shape.length === 2 && name !== 'model.embed_tokens.weight' ? [shape[1], shape[0]] : shape;
    weights.set(name, shape.length === 1 ? tf.ones(engine) : tf.randomNormal(engine, 0, 0.02, 'float32', seed++));
  }
  try {
    return new PretrainedDecoder(c, weights, { contextLength });
  } finally {
    weights.forEach((t) => t.dispose());
  }
}

/**
 * Model FLOPs per trained token of a LoRA step on a decoder, counting only what the step computes
 * (2 FLOPs a multiply-add, PaLM's convention). N = the matmul parameters: every block projection
 * and the head (the embedding is a gather). The base is frozen, so it has no weight gradients:
 *   forward   2·N                     + 4·L·T·H·hd (attention's scores and mix, the full T×T
 *                                        products as the GPT's figure counts them)
 *                                     + 2·Σ r·(in + out) (each adapter: x·A, then ·B)
 *   backward  2·N (dx = dy·Wᵀ only)   + 8·L·T·H·hd (the gradients of q, k and v)
 *                                     + 4·Σ r·(in + out) (each adapter: its input's gradient
 *                                        and A's and B's)
 * = 4·N + 12·L·T·H·hd + 6·Σ r·(in + out). (Full fine-tuning would count 6·N: the weight
 * gradients are the third 2·N.)
 */
function loraFlopsPerToken(c: DecoderConfig, contextLength: number, adapters: { in: number; out: number; rank: number }[]) {
  const d = c.hiddenSize;
  const q = c.heads * c.headDim;
  const kv = c.kvHeads * c.headDim;
  const blockParams = c.layers * (d * q + 2 * d * kv + q * d + 3 * d * c.intermediateSize);
  const matmulParams = blockParams + d * c.vocabSize;
  const attention = 12 * c.layers * contextLength * q;
  const adapter = 6 * adapters.reduce((s, a) => s + a.rank * (a.in + a.out), 0);
  return { flopsPerToken: 4 * matmulParams + attention + adapter, matmulParams, attention, adapter };
}

/** Emit the pretrained-model lines; MFU over `roofGflops` (the run's `machine_gemm_gflops`). */
export async function pretrainedFigures(roofGflops: number, backend: Record<string, unknown>): Promise<void> {
  const config = parseDecoderConfig(SMOLLM2_135M);
  const model = randomDecoder(config, 256);
  // The sampler reads only the special ids and decodes the result (ids past the alphabet decode to nothing).
  const tok = new CharTokenizer();
  const shape = { model: 'SmolLM2-135M shapes, random weights', parameters: model.numParameters };
  const rng = new Rng(5);

  // Sampling: 16 prompts of 16 tokens, 64 new tokens each, with the KV cache; recomputing the
  // prefix costs ~T times more per token, so it is timed over its first few tokens only and the
  // two are compared per token (its later tokens, over longer prefixes, would cost more still).
  {
    const prompts = Array.from({ length: 16 }, () => Array.from({ length: 16 }, () => 1 + rng.int(config.vocabSize - 1)));
    const opts = { temperature: 1, stopAtEos: false, seed: 1 };
    const cachedTokens = 64;
    const recomputeTokens = 6;
    // Warm-up: the first products with each weight pack it for XNNPACK (a prefill and one step).
    await sampleAsync(model, tok, prompts, { ...opts, maxTokens: 2, useCache: true });
    const cached = await timeMs(() => sampleAsync(model, tok, prompts, { ...opts, maxTokens: cachedTokens, useCache: true }), 1, 0);
    const recompute = await timeMs(() => sampleAsync(model, tok, prompts, { ...opts, maxTokens: recomputeTokens, useCache: false }), 1, 0);
    const cachedRate = (16 * cachedTokens) / (cached / 1000);
    const recomputeRate = (16 * recomputeTokens) / (recompute / 1000);
    emit('pretrained_sample_tokens_per_s', cachedRate, 'tokens/s', { ...backend, ...shape, prompts: 16, promptTokens: 16, newTokens: cachedTokens, ms: Math.round(cached) });
    emit('pretrained_sample_speedup_vs_recompute', cachedRate / recomputeRate, 'ratio', {
      ...backend,
      recomputeTokensPerS: Number(recomputeRate.toFixed(1)),
      recomputeNewTokens: recomputeTokens,
      recomputeMs: Math.round(recompute),
      note: `per-token rates: cached over ${cachedTokens} new tokens, recompute over its first ${recomputeTokens}`,
    });
  }

  // LoRA training (rank 8 on every projection, SFT's step: masked cross-entropy, Adam, clipping).
  {
    // Batch 2 × 64 tokens. The wasm heap (4 GiB at most, never returned) peaked at 3.6 GiB for this
    // step: the weights (0.5 GiB), XNNPACK's packed copies of them (~0.5 GiB) and ~1.5 GiB held
    // through the tape's forward (not all of it explained yet). 4 × 128 ran out of heap in an
    // earlier attempt, before the frozen-base path (ops.ts's frozenLinear2d); not retried since.
    const batch = 2;
    const ctx = 64;
    const lora = attachLora(model, { rank: 8, alpha: 16, targets: ['attn', 'mlp'] });
    const adapters = [...model.adapters.values()].map(({ a, b }) => ({ in: a.shape[0], out: b.shape[1]!, rank: a.shape[1]! }));
    const trainer = new SFTTrainer(model, { warmupSteps: 0 });
    const data: Sequence[] = Array.from({ length: batch }, () => {
      const tokens = Array.from({ length: ctx }, () => 1 + rng.int(config.vocabSize - 1));
      return { tokens, lossMask: tokens.map((_, i) => (i === 0 ? 0 : 1)) };
    });
    const ms = await timeMs(() => trainer.stepAsync(data), 3, 1);
    const tokens = batch * (ctx - 1);
    const tps = tokens / (ms / 1000);
    const f = loraFlopsPerToken(config, ctx, adapters);
    const flops = tps * f.flopsPerToken;
    emit('pretrained_lora_train_tokens_per_s', tps, 'tokens/s', {
      ...backend,
      ...shape,
      batch,
      contextLength: ctx,
      stepMs: Number(ms.toFixed(1)),
      lora: { rank: lora.rank, targets: lora.targets, adapterParameters: adapters.reduce((s, a) => s + a.rank * (a.in + a.out), 0) },
    });
    emit('pretrained_lora_mfu', flops / (roofGflops * 1e9), 'ratio', {
      ...backend,
      modelGflopsPerS: Number((flops / 1e9).toFixed(2)),
      flopsPerToken: f.flopsPerToken,
      formula: '4·N (frozen base: forward 2·N, activation gradients 2·N, no weight gradients) + 12·L·T·H·hd (attention) + 6·Σ r·(in+out) (adapters)',
      matmulParams: f.matmulParams,
    });
    trainer.dispose();
  }
  model.dispose();
}
