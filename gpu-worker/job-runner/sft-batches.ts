/**
 * What SFT trains on, for SFT jobs and the warm start of TRAIN jobs alike: a dataset version's
 * rows as demonstrations, and the batches of each step. A row is either
 *
 *   { "prompt": "...", "completion": "...", "system"?: "..." }     (loss on the completion), or
 *   { "messages": [{ "role": "system"|"user"|"assistant"|"tool", "content": "..." }, ...] }
 *                                                                  (loss on every assistant turn),
 *
 * laid out in the model's chat format (the tokenizer's conversation), the same the rollout runtime
 * prompts with. Batches are a function of (seed, step) — epoch-wise shuffles — so a resumed
 * job sees the same batches the uninterrupted one would have.
 */
import { type Sequence } from '../engine/batch';
import { Rng } from '../engine/rng';
import { type ChatMessage, ROLES, type Role, type Tokenizer, maskedConversation } from '../engine/tokenizer';
import { type Json } from '../../sdk/environment/schema';
import { type Emitter } from './emit';
import { JobFailure } from './types';

/** The rows as training sequences; those longer than the context are left out, with a warning. */
export function datasetDemonstrations(tok: Tokenizer, rows: readonly Json[], contextLength: number, emit: Emitter): Sequence[] {
  const sequences: Sequence[] = [];
  let tooLong = 0;
  rows.forEach((row, i) => {
    const seq = demonstration(tok, row, i);
    if (seq.tokens.length > contextLength) tooLong++;
    else sequences.push(seq);
  });
  if (tooLong > 0) emit.log('warn', `${tooLong} of ${rows.length} rows are longer than the context (${contextLength} tokens) and are left out`);
  if (sequences.length === 0) throw new JobFailure(`no row fits the model context (${contextLength} tokens): raise training.model.contextLength`);
  return sequences;
}

/** The rows of step `step`: consecutive slices of per-epoch shuffles of 0..n-1. */
export function batchIndexes(n: number, batchSize: number, seed: number, step: number): number[] {
  const out: number[] = [];
  let position = step * batchSize;
  let epoch = -1;
  let order: number[] = [];
  while (out.length < batchSize) {
    const e = Math.floor(position / n);
    if (e !== epoch) {
      epoch = e;
      order = new Rng(seed * 1_000_003 + e).shuffle(Array.from({ length: n }, (_, i) => i));
    }
    out.push(order[position % n]);
    position++;
  }
  return out;
}

/** One demonstration row as a training sequence (see the file comment for the two shapes). */
function demonstration(tok: Tokenizer, row: Json, index: number): Sequence {
  const where = `dataset row ${index + 1}`;
  if (!row || typeof row !== 'object' || Array.isArray(row)) throw new JobFailure(`${where}: not an object`);
  let messages: ChatMessage[];
  if (Array.isArray(row.messages)) {
    messages = row.messages.map((m, i) => {
      if (!m || typeof m !== 'object' || Array.isArray(m) || typeof m.content !== 'string' || !ROLES.includes(m.role as Role)) {
        throw new JobFailure(`${where}: messages[${i}] needs a role (${ROLES.join(', ')}) and a string content`);
      }
      return { role: m.role as Role, content: m.content };
    });
  } else if (typeof row.prompt === 'string' && typeof row.completion === 'string') {
    messages = [
      ...(typeof row.system === 'string' && row.system !== '' ? [{ role: 'system' as const, content: row.system }] : []),
      { role: 'user', content: row.prompt },
      { role: 'assistant', content: row.completion },
    ];
  } else {
    throw new JobFailure(`${where}: needs "prompt" and "completion" strings, or "messages"`);
  }
  let sequence: Sequence;
  try {
    sequence = maskedConversation(tok, messages);
  } catch (e) {
    throw new JobFailure(`${where}: ${(e as Error).message}`);
  }
  if (!sequence.lossMask.includes(1)) throw new JobFailure(`${where}: nothing to learn (no assistant text)`);
  return sequence;
}
