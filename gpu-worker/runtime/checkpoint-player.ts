/**
 * A saved checkpoint playing a seat of a play session (the play console's opponents and "Let the
 * base policy play"), inside the team's play process.
 *
 * Decision: the play process loads the checkpoint itself, on the CPU path the worker uses when it
 * has no GPU (the wasm backend, else tfjs's cpu backend), and plays it with training's own prompt
 * code and sampling: the same chat layout (rollout.ts's agentSystemPrompt, promptHead and
 * promptTurn, in the environment's context policy), the same legal-move masking (the turn's
 * `actions`, unless the manifest turns maskActions off), the same stop strings, per-turn and
 * per-episode token budgets, and the manifest's temperature. So what the user sees a checkpoint
 * play is what training's rollouts had it play. A sampler job on a worker would also do, but would
 * hold a device and a queue place for a few moves of a tiny model.
 *
 * Each checkpoint is loaded once per process (by storage key) and disposed when no session or
 * autoplay uses it any more. Checkpoints above PLAY_MAX_PARAMETERS are refused (the process's heap
 * is small: the server checks the size in bytes first, this checks the count). Loading and
 * sampling run in this process, never on the server's event loop.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initBackend } from '../engine/backend';
import { loadCheckpoint } from '../engine/checkpoint';
import { type LanguageModel } from '../engine/model';
import { type Tokenizer } from '../engine/tokenizer';
import { agentSystemPrompt, type EnvironmentDescription } from '../../sdk/dry-run-report';
import { TOOL_CALL_CLOSE } from '../../sdk/environment/tools';
import { PLAY_MAX_PARAMETERS, type PlayCheckpoint, type PlaySampling, playCheckpointTooLarge } from '../../sdk/play';
import { modelPolicy } from './engine-policy';
import { type Conversation } from '../engine/tokenizer';
import { turnIds } from './rollout';
import { SandboxError } from './sandbox/errors';

/** A checkpoint the request cannot play, with the reason the user reads (a BAD_REQUEST). */
export class CheckpointRefused extends Error {}

interface Held {
  key: string;
  model: LanguageModel;
  tokenizer: Tokenizer;
  users: number;
}

let backend: Promise<unknown> | null = null;
/** The worker's CPU path: wasm (SIMD), else the JavaScript cpu backend. Once per process. */
function cpuBackend(): Promise<unknown> {
  backend ??= initBackend('wasm').catch(() => initBackend('cpu'));
  return backend;
}

const loading = new Map<string, Promise<Held>>();

async function load(checkpointId: string, checkpoint: PlayCheckpoint): Promise<Held> {
  await cpuBackend();
  const dir = mkdtempSync(join(tmpdir(), 'whetstone-play-'));
  try {
    const file = join(dir, 'checkpoint.safetensors');
    writeFileSync(file, checkpoint.bytes);
    let loaded;
    try {
      loaded = await loadCheckpoint(file);
    } catch (e) {
      throw new CheckpointRefused(`checkpoint ${checkpointId} cannot be loaded: ${(e as Error).message.replace(file, 'its file')}`);
    }
    loaded.reference?.dispose();
    if (loaded.model.numParameters > PLAY_MAX_PARAMETERS) {
      loaded.model.dispose();
      throw new CheckpointRefused(playCheckpointTooLarge(checkpointId, loaded.model.numParameters));
    }
    return { key: checkpoint.storageKey, model: loaded.model, tokenizer: loaded.tokenizer, users: 0 };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A loaded checkpoint, shared by the sessions that play it; `release` when done. */
export async function acquireCheckpoint(checkpointId: string, checkpoint: PlayCheckpoint): Promise<Held> {
  for (;;) {
    let pending = loading.get(checkpoint.storageKey);
    if (!pending) {
      pending = load(checkpointId, checkpoint);
      loading.set(checkpoint.storageKey, pending);
      // A failed load is not cached: the next request tries again (and hears why again).
      pending.catch(() => loading.delete(checkpoint.storageKey));
    }
    const held = await pending;
    // Its last user may have released it (and freed it) while this waited: load it again.
    if (loading.get(checkpoint.storageKey) !== pending) continue;
    held.users++;
    return held;
  }
}

export function releaseCheckpoint(held: Held): void {
  held.users--;
  if (held.users > 0 || loading.get(held.key) === undefined) return;
  loading.delete(held.key);
  held.model.dispose();
}

/** One turn of a checkpoint's seat: what the environment shows it. */
export interface SeatTurn {
  systemPrompt: string;
  observation: string;
  /** The turn's legal actions, when the environment names them. */
  actions?: string[];
  /** 'tool' after a tool call (the observation is the tool's result). */
  role: 'user' | 'tool';
}

/**
 * One seat of one episode played by a checkpoint: its conversation so far (the environment's
 * context policy) and its token budget, as rollout.ts keeps them for a policy's track.
 */
export class CheckpointSeat {
  private tokens: number[] = [];
  private conversation: Conversation | null = null;
  private responseTokens = 0;
  private turns = 0;
  private readonly contextLength: number;

  constructor(
    private readonly held: Held,
    private readonly label: string,
    private readonly description: EnvironmentDescription,
    private readonly sampling: PlaySampling,
    private readonly seed: number,
  ) {
    this.contextLength = held.model.contextLength;
  }

  /**
   * Why this checkpoint cannot play this environment, judged on its first prompt, or null: its
   * tokenizer cannot write the environment's text (characters it has no token for), or the
   * prompt leaves no room in its context.
   */
  mismatch(turn: SeatTurn): string | null {
    const tok = this.held.tokenizer;
    const text = [agentSystemPrompt(turn.systemPrompt, this.description.toolPrompt), turn.observation, ...(turn.actions ?? [])].join('');
    const unk = unkOf(tok);
    const unknown = [...new Set(Array.from(text).filter((ch) => tok.encode(ch).includes(unk)))];
    if (unknown.length > 0) {
      return `${this.label}'s tokenizer has no token for ${unknown.slice(0, 8).map((c) => JSON.stringify(c)).join(', ')}${unknown.length > 8 ? ` and ${unknown.length - 8} more` : ''}, which ${this.description.name} writes: play a checkpoint trained on this environment`;
    }
    const length = this.prompt(turn).ids.length;
    if (length + 1 >= this.contextLength) {
      return `${this.label}'s context is ${this.contextLength} tokens and ${this.description.name}'s first prompt takes ${length}: play a checkpoint with a longer context (training.model.contextLength)`;
    }
    return null;
  }

  /** The checkpoint's action and its log-probability; a turn that cannot be played ends the episode, as in training. */
  async act(turn: SeatTurn): Promise<{ text: string; logprob: number }> {
    const tok = this.held.tokenizer;
    const { ids: prompt, conversation } = this.prompt(turn);
    const { maxTokensPerTurn, maxResponseTokens, temperature, maskActions } = this.sampling;
    if (prompt.length + 1 >= this.contextLength) {
      throw new SandboxError('invalid-output', this.label, `${this.label}'s context (${this.contextLength} tokens) is full: training ends such an episode here too (reason "context")`, null, '');
    }
    const budget = Math.min(maxTokensPerTurn, maxResponseTokens - this.responseTokens, this.contextLength - prompt.length - 1);
    if (budget <= 0) {
      throw new SandboxError('invalid-output', this.label, `${this.label} has written its ${maxResponseTokens} tokens of the episode (maxResponseTokens): training ends such an episode here too`, null, '');
    }
    const [result] = await modelPolicy(this.held.model, tok).generate([prompt], {
      maxTokens: budget,
      temperature,
      stop: this.description.tools.length > 0 ? [TOOL_CALL_CLOSE] : [],
      seed: this.seed * 100003 + this.turns++,
      ...(maskActions && turn.actions ? { allowed: [turn.actions] } : {}),
    });
    this.responseTokens += result.tokens.length;
    if (this.description.context !== 'latest') {
      // The track as rollout.ts keeps it: a turn the policy did not close is closed for it.
      this.tokens = [...prompt, ...result.tokens, ...conversation.closeTurn(result.tokens)];
      this.conversation = conversation;
    }
    return { text: result.text, logprob: result.logprobs.reduce((a, b) => a + b, 0) };
  }

  /** The turn's prompt (the whole track so far in the full context) and the conversation that has it. */
  private prompt(turn: SeatTurn): { ids: number[]; conversation: Conversation } {
    const latest = this.description.context === 'latest';
    const system = agentSystemPrompt(turn.systemPrompt, this.description.toolPrompt);
    const next = turnIds(this.held.tokenizer, latest ? null : this.conversation, system, turn.observation, turn.role);
    return { ids: [...(latest ? [] : this.tokens), ...next.ids], conversation: next.conversation };
  }
}

/** The tokenizer's unknown-character token (the char tokenizer's `<unk>`), or -1 when it has none. */
function unkOf(tok: Tokenizer): number {
  return tok.specialTokens['<unk>'] ?? -1;
}
