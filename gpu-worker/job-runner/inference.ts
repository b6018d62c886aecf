/**
 * INFERENCE: a serving session. Loads the checkpoint (sampler or training kind) once, then answers
 * sampling requests one at a time, each token sent as soon as it is chosen (the KV cache keeps
 * every step to one token's forward pass). Ends "succeeded" after the config's idleSeconds without
 * a request (freeing the device), "cancelled" at once on cancel, "preempted" on preemption.
 */
import * as tf from '@tensorflow/tfjs';
import { inferenceJobConfigSchema, type InferenceJobConfig } from '../../sdk/job-config';
import { type SampleTiming } from '../../sdk/live';
import { type Assignment, type SampleDone, type SampleRequest } from '../../sdk/worker-protocol';
import { type KvCache, type LanguageModel } from '../engine/model';
import { readAndDispose, readAsync } from '../engine/reads';
import { Rng } from '../engine/rng';
import { chooseToken, likeliestTokens, neverSampled, resolveSampleOptions } from '../engine/sampler';
import { chatPrompt } from '../runtime/rollout';
import { type Tokenizer } from '../engine/tokenizer';
import { CheckpointStore } from './checkpoints';
import { baseModelLoader } from './model-cache';
import { Emitter } from './emit';
import type { InferenceChannel } from './inference-channel';
import { type JobControl, type JobSink } from './sink';
import { JobFailure, type JobResult } from './types';
import { yieldToEvents } from './lifecycle';
import { blobKey } from './load-policy';

export async function runInference(assignment: Assignment, sink: JobSink, control: JobControl, channel: InferenceChannel | undefined): Promise<JobResult> {
  const emit = new Emitter(sink);
  const store = new CheckpointStore(sink, baseModelLoader(assignment, sink));
  let model: LanguageModel | null = null;
  try {
    if (!channel) throw new JobFailure('this runner has no request channel for an inference session');
    const config: InferenceJobConfig = inferenceJobConfigSchema.parse(assignment.config);
    const loaded = await loadServed(assignment, config, store, sink);
    model = loaded.model;
    emit.log('info', `inference session: ${loaded.what} loaded; idle timeout ${config.idleSeconds} s`);
    await emit.flushLogs();
    let served = 0;
    for (;;) {
      if (control.cancelled) return { outcome: 'cancelled', reason: 'cancelled' };
      if (control.preempted) return { outcome: 'preempted', reason: 'preempted' };
      const request = await channel.next(config.idleSeconds * 1000, control.changed());
      if (control.cancelled || control.preempted) {
        if (request) channel.push(request);
        continue;
      }
      if (!request) {
        emit.log('info', `idle for ${config.idleSeconds} s after ${served} request(s): ending the session`);
        return { outcome: 'succeeded', reason: `idle for ${config.idleSeconds} s` };
      }
      served++;
      await serve(model, loaded.tokenizer, request, channel, control);
    }
  } catch (e) {
    if (e instanceof JobFailure) return { outcome: 'failed', reason: e.message };
    throw e;
  } finally {
    channel?.close();
    await emit.flushLogs().catch(() => undefined);
    model?.dispose();
    store.dispose();
  }
}

/** What the session serves: its checkpoint, or without one the imported model as it was imported. */
async function loadServed(assignment: Assignment, config: InferenceJobConfig, store: CheckpointStore, sink: JobSink): Promise<{ model: LanguageModel; tokenizer: Tokenizer; what: string }> {
  if (config.checkpointId !== undefined) {
    const loaded = await store.load(blobKey(assignment, config.checkpointId, 'checkpoint'));
    loaded.reference?.dispose();
    return { model: loaded.model, tokenizer: loaded.tokenizer, what: `${loaded.kind} checkpoint ${config.checkpointId}` };
  }
  const base = assignment.baseModel;
  if (!base) throw new JobFailure(`imported model ${config.baseModelId ?? '(unset)'} did not come with the assignment`);
  const { model, tokenizer } = await baseModelLoader(assignment, sink)({ modelId: base.modelId, contentHash: base.contentHash }, { valueHead: false });
  return { model, tokenizer, what: `imported model ${base.modelId}` };
}

/** One request: prefill the prompt, then one token at a time with the KV cache, each sent at once. */
async function serve(model: LanguageModel, tok: Tokenizer, r: SampleRequest, channel: InferenceChannel, control: JobControl): Promise<void> {
  const ids = { requestId: r.requestId, attemptId: r.attemptId };
  let text = '';
  const received = performance.now();
  let promptTokens = 0;
  let firstAt: number | null = null;
  let lastAt: number | null = null;
  let count = 0;
  const timing = (): SampleTiming => ({ promptTokens, tokens: count, firstTokenMs: firstAt === null ? 0 : firstAt - received, decodeMs: firstAt === null || lastAt === null ? 0 : lastAt - firstAt });
  // Every sampled token as sampled (a token may add no text of its own: part of a character).
  const tokens: SampleDone['tokens'] = [];
  const done = (reason: SampleDone['reason'], error?: string) => channel.reply({ type: 'done', done: { ...ids, reason, text, tokens, ...(error ? { error } : {}), timing: timing() } });
  let cache: KvCache | null = null;
  try {
    const o = resolveSampleOptions({ maxTokens: r.maxTokens, temperature: r.temperature, topK: r.topK ?? 0, topP: r.topP ?? 1, stop: r.stop ?? [] });
    const prompt = r.chat ? chatPrompt(tok, r.chat.system, r.chat.messages) : tok.prompt(r.prompt);
    promptTokens = prompt.length;
    const ctx = model.contextLength;
    const budget = Math.min(o.maxTokens, ctx - prompt.length);
    if (budget <= 0) return void (await done('error', `the prompt has ${prompt.length} tokens; the model's context is ${ctx}`));
    const rng = new Rng(r.seed ?? (Math.random() * 2 ** 31) >>> 0);
    const banned = neverSampled(tok);
    const generated: number[] = [];
    let last = prompt;
    for (let step = 0; step < budget; step++) {
      const prev: KvCache | null = cache;
      const input = [last];
      const start: number = prev?.length ?? 0;
      const out = tf.tidy(() => {
        const res = model.forward(input, { positions: [input[0].map((_, j) => start + j)], cache: prev ?? undefined, returnCache: true, lastOnly: true });
        return { logits: res.logits, keys: res.cache!.keys, values: res.cache!.values };
      });
      if (prev) disposeCache(prev);
      cache = { keys: out.keys, values: out.values, length: start + input[0].length };
      const logits = (await readAsync(readAndDispose(out.logits))) as Float32Array;
      const { token, logprob } = chooseToken(logits, o, banned, rng);
      lastAt = performance.now();
      firstAt ??= lastAt;
      count++;
      const alternatives = r.alternatives > 0 ? likeliestTokens(logits, o.temperature, banned, r.alternatives).map((a) => ({ text: tok.decode([a.token], { keepSpecial: true }), logprob: a.logprob })) : undefined;
      if (token === tok.eos) return void (await done('eos'));
      generated.push(token);
      tokens.push({ id: token, text: tok.decode([token], { keepSpecial: true }), logprob });
      last = [token];
      let full = tok.decode(generated);
      let stopped = false;
      for (const s of o.stop) {
        const at = full.indexOf(s, Math.max(0, text.length - s.length + 1));
        if (at >= 0) {
          full = full.slice(0, at + s.length);
          stopped = true;
          break;
        }
      }
      const delta = full.slice(text.length);
      text = full;
      if (delta) await channel.reply({ type: 'token', token: { ...ids, text: delta, logprob, ...(alternatives ? { alternatives } : {}) } });
      if (stopped) return void (await done('stop'));
      // Let a cancel (an IPC message) in between tokens.
      await yieldToEvents();
      if (control.cancelled || control.preempted) return void (await done('cancelled'));
    }
    await done('length');
  } catch (e) {
    await done('error', (e as Error).message.slice(0, 2000));
  } finally {
    if (cache) disposeCache(cache);
  }
}

function disposeCache(cache: KvCache): void {
  cache.keys.forEach((t) => t.dispose());
  cache.values.forEach((t) => t.dispose());
}
