/**
 * Supervised warm starts from recorded episodes. A transcript played by a bot (a math oracle, the
 * Gomoku scripted bot) or by any other player becomes SFT sequences laid out exactly as the rollout
 * state machine prompts the policy, so that what SFT teaches is what the policy later sees: the
 * system prompt (with the tool paragraph), each observation, and the action with loss mask 1.
 */
import { type Sequence, type Tokenizer } from './policy';
import { agentSystemPrompt } from '../../sdk/dry-run-report';
import { type Conversation } from '../engine/tokenizer';
import { turnIds } from './rollout';
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
    const full = new Map<string, { tokens: number[]; lossMask: number[]; conversation: Conversation }>();
    let role: 'user' | 'tool' = 'user';
    for (const turn of t.turns) {
      const observationRole = role;
      role = turn.tool ? 'tool' : 'user';
      if (options.agents && !options.agents.includes(turn.agent)) continue;
      const system = agentSystemPrompt(t.systemPrompts[turn.agent] ?? '', options.toolPrompt ?? '');
      const latest = options.context === 'latest';
      const seq = latest ? undefined : full.get(turn.agent);
      const prompt = turnIds(tok, seq?.conversation ?? null, system, turn.observation, observationRole);
      const action = prompt.conversation.writeTurn(turn.action);
      const ids = [...prompt.ids, ...action];
      const mask = [...prompt.ids.map(() => 0), ...action.map(() => 1)];
      if (latest) out.push({ tokens: ids, lossMask: mask });
      else if (seq) {
        seq.tokens.push(...ids);
        seq.lossMask.push(...mask);
        seq.conversation = prompt.conversation;
      } else full.set(turn.agent, { tokens: ids, lossMask: mask, conversation: prompt.conversation });
    }
    out.push(...[...full.values()].map(({ tokens, lossMask }) => ({ tokens, lossMask })));
  }
  return out.filter((s) => s.tokens.length <= options.contextLength);
}
