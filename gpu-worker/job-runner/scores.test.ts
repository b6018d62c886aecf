/** Evaluation figures from episodes: wins/draws/losses with Wilson intervals, legal moves, length, tool use. */
import { describe, expect, test } from 'vitest';
import { type EpisodeRollout, type Move } from '../runtime/rollout';
import { scoreEpisodes, wilson } from './scores';

function move(agent: string, byBot: boolean, legal: boolean | null, toolOk?: boolean): Move {
  return { agent, text: 'm', byBot, observation: '', rewards: {}, info: {}, tool: toolOk === undefined ? null : { name: 'calculator', ok: toolOk }, legal };
}

function episode(returns: Record<string, number>, moves: Move[], endReason: EpisodeRollout['endReason'] = 'terminated'): EpisodeRollout {
  const agents = Object.fromEntries(
    Object.entries(returns).map(([agent, totalReward]) => [agent, { agent, policy: null, learn: false, sequences: [], logprobs: [], turnRewards: [], totalReward, turns: 0, responseTokens: 0 }]),
  );
  return { episodeId: 'e', group: 'g', state: 'TERMINATED', endReason, error: null, task: null, agents, moves, finalInfo: {} };
}

describe('scoreEpisodes', () => {
  test('two-player games: win, draw and loss rates with the Wilson interval, legal moves of the evaluated seat only, mean length', () => {
    const games = [
      episode({ black: 1, white: -1 }, [move('black', false, true), move('white', true, false), move('black', false, true)]),
      episode({ black: 0, white: 0 }, [move('black', true, true), move('white', false, false)]),
      episode({ black: -1, white: 1 }, [move('black', false, true)]),
      episode({ black: 1, white: -1 }, [], 'error'),
    ];
    const s = scoreEpisodes(games, ['black', 'white', 'black', 'black'], true);
    expect(s.games).toBe(3);
    expect(s.errors).toBe(1);
    expect(s.metrics).toMatchObject({ 'eval/wins': 1, 'eval/draws': 1, 'eval/losses': 1, 'eval/win_rate': 1 / 3, 'eval/draw_rate': 1 / 3, 'eval/loss_rate': 1 / 3, 'eval/mean_length': 2 });
    const [low, high] = wilson(1, 3);
    expect(s.metrics['eval/win_rate_low']).toBe(low);
    expect(s.metrics['eval/win_rate_high']).toBe(high);
    // The evaluated seat's own moves: 3 legal of 4 (the bot's illegal move does not count).
    expect(s.metrics['eval/legal_move_rate']).toBe(0.75);
    expect(s.summary).toMatch(/^win rate 0\.333 \(95% 0\.\d+–0\.\d+\), draws 0\.333, losses 0\.333 over 3 games \(1 errors\), mean length 2\.0 moves, legal moves 0\.750$/);
  });

  test('single-agent episodes with tools: the share that made a call that ran; no legal-move rate without offered actions', () => {
    const eps = [
      episode({ agent: 1 }, [move('agent', false, null, true), move('agent', false, null)]),
      episode({ agent: 0 }, [move('agent', false, null, false), move('agent', false, null)]),
    ];
    const s = scoreEpisodes(eps, ['agent', 'agent'], false, { tools: true });
    expect(s.metrics['eval/tool_use_rate']).toBe(0.5);
    expect(s.metrics).not.toHaveProperty('eval/legal_move_rate');
    expect(scoreEpisodes(eps, ['agent', 'agent'], false).metrics).not.toHaveProperty('eval/tool_use_rate');
  });
});
