/**
 * Supervised warm starts from recorded episodes. A transcript played by a bot (a math oracle, the
 * Gomoku scripted bot) or by any other player becomes SFT sequences laid out exactly as the rollout
 * state machine prompts the policy, so that what SFT teaches is what the policy later sees: the
 * system prompt (with the tool paragraph), each observation, and the action with loss mask 1.
 */
import { type Sequence, type Tokenizer } from './policy';
import { agentSystemPrompt } from '../../sdk/dry-run-report';
import { promptHead, promptTurn } from './rollout';
import type { Transcript } from '../../sdk/dry-run-report';

export interface DemonstrationOptions {
  /** The environment's context policy (`env.description.context`), or the rollout's override. */
  context: 'full' | 'latest';
  /** The environment's tool paragraph (`env.description.toolPrompt`); empty without tools. */
  toolPrompt?: string;
  /** Agents whose actions are imitated; default every agent. */
  agents?: readonly string[];
  /** Longest sequence to keep (the model's context length); longer ones are dropped. */
  contextLength: number;
}

/**
 * One sequence per imitated turn (`latest`) or per imitated agent and episode (`full`). Actions are
 * followed by EOS, trainable too, so the policy learns to end its turn. Episodes that ended in an
 * error are skipped.
 */
export function demonstrationSequences(tok: Tokenizer, transcripts: readonly Transcript[], options: DemonstrationOptions): Sequence[] {
  const out: Sequence[] = [];
  for (const t of transcripts) {
    if (t.endReason === 'error') continue;
    const full = new Map<string, { tokens: number[]; lossMask: number[] }>();
    let role: 'user' | 'tool' = 'user';
    for (const turn of t.turns) {
      const observationRole = role;
      role = turn.tool ? 'tool' : 'user';
      if (options.agents && !options.agents.includes(turn.agent)) continue;
      const system = agentSystemPrompt(t.systemPrompts[turn.agent] ?? '', options.toolPrompt ?? '');
      const action = [...tok.encode(turn.action), tok.eos];
      const prompt = promptTurn(tok, turn.observation, observationRole);
      if (options.context === 'latest') {
        const head = promptHead(tok, system);
        out.push({ tokens: [...head, ...prompt, ...action], lossMask: [...head.map(() => 0), ...prompt.map(() => 0), ...action.map(() => 1)] });
      } else {
        let seq = full.get(turn.agent);
        if (!seq) {
          const head = promptHead(tok, system);
          seq = { tokens: [...head], lossMask: head.map(() => 0) };
          full.set(turn.agent, seq);
        }
        seq.tokens.push(...prompt, ...action);
        seq.lossMask.push(...prompt.map(() => 0), ...action.map(() => 1));
      }
    }
    out.push(...full.values());
  }
  return out.filter((s) => s.tokens.length <= options.contextLength);
}
