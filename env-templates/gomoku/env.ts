/**
 * Gomoku: data-free, multi-turn, two agents. Black ("X") moves first; each agent sees the whole
 * board and writes its move as <move>row,col</move>. Defaults follow the OpenTinker paper: 9 × 9,
 * five or more in a row wins.
 */
import { defineMultiAgentEnvironment } from 'whetstone';
import { BLACK, type Board, WHITE, formatMove, isFull, newBoard, parseMove, place, renderBoard, at, inside } from './board';
import { randomMove, scriptedMove } from './bots';

export type Player = 'black' | 'white';

export interface GomokuOptions {
  size: number;
  winLength: number;
  /** Rewards; an invalid move forfeits the game: the mover gets `invalid`, the opponent `-invalid`, so the game stays zero-sum. */
  rewards: { win: number; loss: number; draw: number; invalid: number };
  /** Share of random moves of the scripted bot (OpenTinker: 0.3). */
  botRandomness: number;
  /**
   * The system prompt: `full` explains the rules in words (for pretrained models); `brief` is one
   * short line with the size, the win length and the move syntax, for small models trained from
   * scratch, whose every step pays for each prompt token.
   */
  instructions: 'full' | 'brief';
}

export const DEFAULT_OPTIONS: GomokuOptions = {
  size: 9,
  winLength: 5,
  rewards: { win: 1, loss: -1, draw: 0, invalid: -1 },
  botRandomness: 0.3,
  instructions: 'full',
};

interface State {
  board: Board;
  toMove: Player;
  lastMove: string | null;
}

const STONE = { black: BLACK, white: WHITE } as const;
const OTHER: Record<Player, Player> = { black: 'white', white: 'black' };

function observe(state: State, agent: Player): string {
  const last = state.lastMove ? `${OTHER[agent]} played ${state.lastMove}.\n` : '';
  return `${renderBoard(state.board)}\n${last}You are ${agent} (${agent === 'black' ? 'X' : 'O'}). Your move:`;
}

export function createGomoku(overrides: Partial<GomokuOptions> = {}) {
  const options: GomokuOptions = { ...DEFAULT_OPTIONS, ...overrides, rewards: { ...DEFAULT_OPTIONS.rewards, ...overrides.rewards } };
  const { size, winLength, rewards } = options;
  newBoard(size, winLength); // validates the options at definition time

  return defineMultiAgentEnvironment<{ size: number; winLength: number }, State, Player>({
    name: 'gomoku',
    description: `${size} × ${size} Gomoku, ${winLength} or more in a row wins.`,
    agents: ['black', 'white'],
    context: 'latest',
    systemPrompt: (agent) =>
      options.instructions === 'brief'
        ? `Gomoku ${size}x${size}, ${winLength} in a row wins. Reply <move>row,col</move>.`
        : `You play Gomoku on a ${size}x${size} board as ${agent} (${agent === 'black' ? 'X' : 'O'}). ` +
      `Get ${winLength} or more stones in a row (across, down or diagonally) to win. ` +
      `Rows and columns are numbered from 1. Reply with your move as <move>row,col</move>.`,
    sample: () => ({ size, winLength }),
    reset: (ctx) => {
      ctx.state = { board: newBoard(ctx.task.size, ctx.task.winLength), toMove: 'black', lastMove: null };
      return { agent: 'black', observation: observe(ctx.state, 'black') };
    },
    step: (action, ctx) => {
      const state = ctx.state;
      const mover = state.toMove;
      const opponent = OTHER[mover];
      const move = parseMove(action);
      const problem =
        'problem' in move
          ? move.problem
          : !inside(state.board, move.row, move.col)
            ? `${move.row + 1},${move.col + 1} is off the board`
            : at(state.board, move.row, move.col) !== 0
              ? `${move.row + 1},${move.col + 1} is taken`
              : null;
      if (problem !== null || 'problem' in move) {
        return {
          rewards: { [mover]: rewards.invalid, [opponent]: -rewards.invalid },
          terminated: true,
          info: { result: opponent, reason: `invalid move by ${mover}: ${problem}`, player: mover, move: null },
        };
      }
      const won = place(state.board, move.row, move.col, STONE[mover]);
      const moveInfo = { player: mover, move: [move.row + 1, move.col + 1], moveNumber: state.board.moves };
      if (won) {
        return { rewards: { [mover]: rewards.win, [opponent]: rewards.loss }, terminated: true, info: { ...moveInfo, result: mover, reason: `${winLength} in a row` } };
      }
      if (isFull(state.board)) {
        return { rewards: { [mover]: rewards.draw, [opponent]: rewards.draw }, terminated: true, info: { ...moveInfo, result: 'draw', reason: 'board full' } };
      }
      state.toMove = opponent;
      state.lastMove = `${move.row + 1},${move.col + 1}`;
      return { rewards: {}, terminated: false, info: moveInfo, next: { agent: opponent, observation: observe(state, opponent) } };
    },
    bots: {
      scripted: (_observation, ctx, agent) => {
        const m = scriptedMove(ctx.state.board, STONE[agent], ctx.rng, options.botRandomness);
        return formatMove(m.row, m.col);
      },
      random: (_observation, ctx) => {
        const m = randomMove(ctx.state.board, ctx.rng);
        return formatMove(m.row, m.col);
      },
    },
  });
}

export default createGomoku();
