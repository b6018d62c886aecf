/**
 * The engine on WebGPU equals the engine on the cpu backend. In CI the adapter is Mesa's lavapipe
 * (`scripts/install-lavapipe.sh`, run by `.ci/run`), so sizes stay small: lavapipe runs the
 * shaders on the CPU. Without an adapter these tests are skipped with a message, except under
 * CI=true, where a missing adapter is a failure.
 */
import * as tf from '@tensorflow/tfjs';
import { afterAll, describe, expect, it } from 'vitest';
import { initBackend } from './backend';
import { type Sequence, prepareBatch } from './batch';
import { GRPOTrainer } from './grpo';
import { attachLora } from './lora';
import { maskedNll } from './losses';
import { GPT } from './model';
import { targetLogProbs } from './ops';
import { gradients } from './optim';
import { sampleAsync } from './sampler';
import { SFTTrainer } from './sft';
import { CharTokenizer } from './tokenizer';
import { DeviceFaultError } from './webgpu';
import { reversalExample } from '../test-support/engine/test-tasks';

const webgpu = await initBackend('webgpu').then(
  (report) => ({ report, error: null }),
  (e: Error) => ({ report: null, error: e.message }),
);
if (webgpu.error) {
  if (process.env.CI === 'true') throw new Error(`CI=true and no WebGPU adapter: ${webgpu.error} (does .ci/run's lavapipe install work?)`);
  console.warn(`WebGPU tests skipped: ${webgpu.error}. Install a Vulkan driver (scripts/install-lavapipe.sh gives Mesa's software one) to run them.`);
}

const tok = new CharTokenizer('abcde=');
const config = { vocabSize: tok.vocabSize, contextLength: 12, layers: 1, width: 16, heads: 2, tiedHead: false, seed: 1 };
const batch: Sequence[] = ['abc', 'eda', 'bb', 'cde'].map((s) => reversalExample(tok, s));

/** Run `fn` on `backend` with a fresh model of `config` (the same seed gives the same weights). */
async function on<T>(backend: 'cpu' | 'webgpu', fn: (m: GPT) => Promise<T>, cfg: Partial<typeof config> = {}): Promise<T> {
  await initBackend(backend);
  const model = new GPT({ ...config, ...cfg });
  try {
    return await fn(model);
  } finally {
    model.dispose();
  }
}

const params = async (m: GPT) => new Map(await Promise.all([...m.params].map(async ([k, v]) => [k, await v.data()] as const)));

function expectClose(a: ArrayLike<number>, b: ArrayLike<number>, tol = 1e-4): void {
  expect(a.length).toBe(b.length);
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]) / (1 + Math.abs(b[i])));
  expect(worst).toBeLessThan(tol);
}

afterAll(async () => {
  if (webgpu.report) await initBackend('cpu');
});

describe.skipIf(webgpu.error !== null)('the engine on WebGPU', () => {
  const b = prepareBatch(batch, tok.pad);
  const lossOf = (m: GPT) => () => maskedNll(targetLogProbs(m.forward(b.inputs).logits, tf.tensor1d(b.targets, 'int32')), tf.tensor1d(b.mask));

  it('advertises its adapter as a WEBGPU device; a software one says so', () => {
    const r = webgpu.report!;
    expect(r.backend).toBe('webgpu');
    expect(r.tfjsBackend).toBe('webgpu');
    expect(r.adapter).toBeDefined();
    expect(r.devices).toEqual([expect.objectContaining({ kind: 'webgpu' })]);
    expect(r.devices[0].name).toContain(r.adapter!.description || r.adapter!.vendor);
    expect(r.devices[0].memoryBytes).toBeGreaterThan(0);
    if (r.adapter!.software) expect(r.devices[0].name).toMatch(/software/);
  });

  it('auto never picks a software adapter', async () => {
    const auto = await initBackend('auto');
    if (webgpu.report!.adapter!.software) {
      expect(auto.backend).not.toBe('webgpu');
      expect(auto.skipped.join('\n')).toMatch(/only a software adapter/);
    }
  });

  it('gives the forward logits and gradients of the cpu backend', async () => {
    const run = (m: GPT) => {
      const logits = tf.tidy(() => m.forward(b.inputs).logits);
      const { value, grads } = gradients(lossOf(m), m.trainableVariables());
      return { logits, value, grads };
    };
    const read = async (r: ReturnType<typeof run>) => {
      const out = { logits: await r.logits.data(), loss: (await r.value.data())[0], grads: new Map<string, Float32Array>() };
      for (const [k, g] of r.grads) out.grads.set(k, (await g.data()) as Float32Array);
      tf.dispose([r.logits, r.value, ...r.grads.values()]);
      return out;
    };
    const cpu = await on('cpu', (m) => read(run(m)));
    const gpu = await on('webgpu', (m) => read(run(m)));
    expectClose(gpu.logits, cpu.logits);
    expect(gpu.loss).toBeCloseTo(cpu.loss, 4);
    expect([...gpu.grads.keys()]).toEqual([...cpu.grads.keys()]);
    for (const [k, g] of cpu.grads) expectClose(gpu.grads.get(k)!, g, 1e-3);
  });

  it('takes the same SFT step as the cpu backend', async () => {
    const step = async (m: GPT) => {
      const trainer = new SFTTrainer(m, { learningRate: 1e-2, warmupSteps: 0 });
      const metrics = [await trainer.stepAsync(batch), await trainer.stepAsync(batch)];
      trainer.dispose();
      return { metrics, params: await params(m) };
    };
    const cpu = await on('cpu', step);
    const gpu = await on('webgpu', step);
    for (let i = 0; i < 2; i++) {
      expect(gpu.metrics[i].loss).toBeCloseTo(cpu.metrics[i].loss, 4);
      expect(gpu.metrics[i].gradNorm).toBeCloseTo(cpu.metrics[i].gradNorm, 3);
    }
    for (const [k, v] of cpu.params) expectClose(gpu.params.get(k)!, v, 1e-3);
  });

  it('takes the same GRPO step as the cpu backend', async () => {
    const rewarded = batch.map((s, i) => ({ ...s, rewards: i % 2, group: Math.floor(i / 2) }));
    const step = async (m: GPT) => {
      const trainer = new GRPOTrainer(m, { learningRate: 1e-2, seed: 2, klCoef: 0.05 });
      const metrics = await trainer.stepAsync(rewarded);
      trainer.dispose();
      return { metrics, params: await params(m) };
    };
    const cpu = await on('cpu', step);
    const gpu = await on('webgpu', step);
    expect(gpu.metrics.updates).toBe(cpu.metrics.updates);
    for (const key of ['loss', 'policyLoss', 'kl', 'entropy', 'gradNorm'] as const) expect(gpu.metrics[key]).toBeCloseTo(cpu.metrics[key]!, 3);
    for (const [k, v] of cpu.params) expectClose(gpu.params.get(k)!, v, 1e-3);
  });

  it('samples the same tokens with the KV cache as by recomputing, and as the cpu backend', async () => {
    const prompts = [[tok.bos, ...tok.encode('ab=')], [tok.bos, ...tok.encode('e=')]];
    const opts = { temperature: 0, maxTokens: 6, stopAtEos: false };
    const both = async (m: GPT) => [await sampleAsync(m, tok, prompts, { ...opts, useCache: true }), await sampleAsync(m, tok, prompts, { ...opts, useCache: false })];
    const [cached, recomputed] = await on('webgpu', both);
    expect(cached.map((r) => r.tokens)).toEqual(recomputed.map((r) => r.tokens));
    const [cpuCached] = await on('cpu', both);
    expect(cached.map((r) => r.tokens)).toEqual(cpuCached.map((r) => r.tokens));
    for (let i = 0; i < prompts.length; i++) expectClose(cached[i].logprobs, cpuCached[i].logprobs, 1e-3);
  });

  it('trains LoRA adapters as the cpu backend does, the base frozen', async () => {
    const step = async (m: GPT) => {
      attachLora(m, { rank: 2, alpha: 4, seed: 3 });
      const base = await params(m);
      const trainer = new SFTTrainer(m, { learningRate: 1e-2, warmupSteps: 0 });
      const metrics = await trainer.stepAsync(batch);
      trainer.dispose();
      const adapters = new Map<string, Float32Array>();
      for (const [k, ad] of m.adapters) adapters.set(k, (await ad.b.data()) as Float32Array);
      return { metrics, base, after: await params(m), adapters };
    };
    const cpu = await on('cpu', step);
    const gpu = await on('webgpu', step);
    expect(gpu.metrics.loss).toBeCloseTo(cpu.metrics.loss, 4);
    for (const [k, v] of gpu.base) expect(gpu.after.get(k)).toEqual(v);
    for (const [k, v] of cpu.adapters) expectClose(gpu.adapters.get(k)!, v, 1e-3);
  });

  it('leaks no tensor over 100 SFT steps', async () => {
    await on(
      'webgpu',
      async (m) => {
        const trainer = new SFTTrainer(m, { learningRate: 1e-3, warmupSteps: 0 });
        const small = batch.slice(0, 2);
        await trainer.stepAsync(small);
        const before = tf.memory().numTensors;
        for (let i = 0; i < 100; i++) await trainer.stepAsync(small);
        expect(tf.memory().numTensors).toBe(before);
        trainer.dispose();
      },
      { width: 8 },
    );
  });

  // Lavapipe cannot run out of memory on demand; an error the device reports the same way (an
  // uncaptured validation error: a buffer past the device's limit) takes the same path as an
  // out-of-memory one, which differs only in its words and class.
  it('an error the device reports fails the next read with its words, without a requeue, and the next initBackend makes a new device', async () => {
    await on('webgpu', async (m) => {
      const trainer = new SFTTrainer(m, { learningRate: 1e-3, warmupSteps: 0 });
      await trainer.stepAsync(batch);
      const device = (tf.backend() as unknown as { device: { limits: { maxBufferSize: number }; createBuffer(d: { size: number; usage: number }): unknown } }).device;
      device.createBuffer({ size: device.limits.maxBufferSize + 256, usage: 0x80 /* STORAGE */ });
      // Dawn reports the error asynchronously: steps may still succeed until it has.
      let failed: unknown = null;
      await expect
        .poll(async () => (failed = await trainer.stepAsync(batch).then(() => null, (e: unknown) => e)), { timeout: 60_000 })
        .not.toBeNull();
      expect(failed).toBeInstanceOf(DeviceFaultError);
      expect((failed as DeviceFaultError).requeue).toBe(false);
      expect((failed as DeviceFaultError).message).toMatch(/^WebGPU error: .*(size|Buffer)/i);
    });
    const again = await initBackend('webgpu');
    expect(again.backend).toBe('webgpu');
    const t = tf.tensor([1, 2, 3]).mul(2);
    expect(Array.from(await t.data())).toEqual([2, 4, 6]);
    t.dispose();
  });

  // Last: it loses this file's device on purpose.
  it('a lost device fails the next read with that reason (requeue), and the next initBackend makes a new device', async () => {
    await on('webgpu', async (m) => {
      const trainer = new SFTTrainer(m, { learningRate: 1e-3, warmupSteps: 0 });
      await trainer.stepAsync(batch);
      (tf.backend() as unknown as { device: { destroy(): void } }).device.destroy();
      const lost = await trainer.stepAsync(batch).then(
        () => null,
        (e: unknown) => e,
      );
      expect(lost).toBeInstanceOf(DeviceFaultError);
      expect((lost as DeviceFaultError).requeue).toBe(true);
      expect((lost as DeviceFaultError).message).toMatch(/^WebGPU device lost/);
    });
    const again = await initBackend('webgpu');
    expect(again.backend).toBe('webgpu');
    const t = tf.tensor([1, 2, 3]).mul(2);
    expect(Array.from(await t.data())).toEqual([2, 4, 6]);
    t.dispose();
  });
});
