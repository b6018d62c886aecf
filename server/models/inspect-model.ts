/**
 * The engine's check of a model folder (gpu-worker/engine/pretrained/inspect.ts), run in a process
 * of its own (inspect-process.ts): the server never imports the engine, and a large tokenizer's
 * parsing never holds up the event loop. A check that outlasts its budget is stopped and refused.
 */
import { type InspectAnswer, modelCardSchema, type ModelCard } from '../../sdk/models';
import { askRuntime } from '../environments/fork-runtime';

/** Reading headers and a tokenizer takes seconds even for large models; this is a backstop. */
const INSPECT_MS = 120_000;

/** One check at a time: each is a process of up to 2 GB, and imports are rare. */
let queue: Promise<unknown> = Promise.resolve();

export function inspectModelFolder(folder: string): Promise<{ ok: true; card: ModelCard } | { ok: false; error: string }> {
  const turn = queue.then(() => inspectNow(folder));
  queue = turn.catch(() => undefined);
  return turn;
}

async function inspectNow(folder: string): Promise<{ ok: true; card: ModelCard } | { ok: false; error: string }> {
  const answer = await askRuntime<InspectAnswer>('gpu-worker/engine/pretrained/inspect-process.ts', 2048, { folder }, INSPECT_MS, ({ timedOut, code }) => ({
    ok: false,
    error: timedOut ? `the model check took longer than ${INSPECT_MS / 1000} s` : `the model check stopped (exit code ${code}): the folder may be too large for its memory`,
  }));
  return answer.ok ? { ok: true, card: modelCardSchema.parse(answer.card) } : answer;
}
