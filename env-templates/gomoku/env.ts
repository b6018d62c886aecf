/**
 * Gomoku: data-free, multi-turn, two agents. Black ("X") moves first; each agent sees the whole
 * board and writes its move as <move>row,col</move>. Defaults follow the OpenTinker paper: 9 × 9,
 * five or more in a row wins.
 */
import { defineMultiAgentEnvironment } from 'whetstone';
import { BLACK, type Board, WHITE, formatMove, isFull, newBoard, parseMove, place, readCells, renderBoard, renderCompact, at, inside, symmetries, transformBoard } from './board';
import { expertMove, randomMove, scriptedMove } from './bots';

export type Player = 'black' | 'white';

export interface GomokuOptions {
  size: number;
  winLength: number;
  /** Rewards; an invalid move forfeits the game: the mover gets `invalid`, the opponent `-invalid`, so the game stays zero-sum. */
  rewards: { win: number; loss: number; draw: number; invalid: number };
  /** Share of random moves of the scripted bot (OpenTinker: 0.3). */
  botRandomness: number;
  /** Share of the expert bot's quiet moves (nothing urgent on the board) played at random near the stones. */
  expertExplore: number;
  /**
   * The system prompt: `full` explains the rules in words (for pretrained models); `brief` is one
   * short line with the size, the win length and the move syntax, for small models trained from
   * scratch, whose every step pays for each prompt token.
   */
  instructions: 'full' | 'brief';
  /**
   * How the board reads: `grid` spaces the cells and numbers the columns (easy for people and
   * pretrained models); `compact` is one line per row, its number then its cells (`5....X....`),
   * under a line with the reader's stone and the opponent's last move (`O 5,5`, `X -,-` before the
   * first move). Every compact observation of a size has the same length, so each cell sits at the
   * same position in every prompt: about 100 characters on 9 × 9 against about 260.
   */
  observation: 'grid' | 'compact';
  /**
   * Offer the empty cells as the turn's `actions`: the policy is then constrained to write a legal
   * move (legal-move masking) and never forfeits. Off, an illegal move forfeits the game.
   */
  legalMoves: boolean;
}

export const DEFAULT_OPTIONS: GomokuOptions = {
  size: 9,
  winLength: 5,
  rewards: { win: 1, loss: -1, draw: 0, invalid: -1 },
  botRandomness: 0.3,
  expertExplore: 0.2,
  instructions: 'brief',
  observation: 'compact',
  legalMoves: true,
};

interface State {
  board: Board;
  toMove: Player;
  lastMove: string | null;
}

const STONE = { black: BLACK, white: WHITE } as const;
const OTHER: Record<Player, Player> = { black: 'white', white: 'black' };

function observeGrid(state: State, agent: Player): string {
  const last = state.lastMove ? `${OTHER[agent]} played ${state.lastMove}.\n` : '';
  return `${renderBoard(state.board)}\n${last}You are ${agent} (${agent === 'black' ? 'X' : 'O'}). Your move:`;
}

function observeCompact(state: State, agent: Player): string {
  return `${agent === 'black' ? 'X' : 'O'} ${state.lastMove ?? '-,-'}\n${renderCompact(state.board)}`;
}

/** Every empty cell as a move, in reading order. */
function legalMoves(board: Board): string[] {
  const moves: string[] = [];
  for (let r = 0; r < board.size; r++) for (let c = 0; c < board.size; c++) if (at(board, r, c) === 0) moves.push(formatMove(r, c));
  return moves;
}

/**
 * A turn seen through the board's 8 symmetries (the warm start's `augment: "symmetries"`): the
 * observation is read back into a board and its last move, each is rotated or reflected, and the
 * observation is written again as the environment writes it; so is the move.
 */
function symmetricTurns(size: number, winLength: number, observe: (state: State, agent: Player) => string, observation: string, action: string, agent: Player) {
  const lines = observation.split('\n');
  // Both layouts have one line above the rows: the compact header or the grid's column numbers.
  const compact = /^[XO] /.test(lines[0]);
  const board: Board = { ...newBoard(size, winLength), cells: readCells(lines.slice(1, 1 + size), size) };
  board.moves = board.cells.filter((c) => c !== 0).length;
  const last = compact ? /^[XO] (\d+),(\d+)$/.exec(lines[0]) : / played (\d+),(\d+)\./.exec(observation);
  const move = parseMove(action);
  if ('problem' in move) throw new Error(`symmetries: the action "${action}" is not a move (${move.problem})`);
  return symmetries(size).map((map) => {
    const [lr, lc] = last ? map(Number(last[1]) - 1, Number(last[2]) - 1) : [0, 0];
    const [mr, mc] = map(move.row, move.col);
    const state: State = { board: transformBoard(board, map), toMove: agent, lastMove: last ? `${lr + 1},${lc + 1}` : null };
    return { observation: observe(state, agent), action: formatMove(mr, mc) };
  });
}

export function createGomoku(overrides: Partial<GomokuOptions> = {}) {
  const options: GomokuOptions = { ...DEFAULT_OPTIONS, ...overrides, rewards: { ...DEFAULT_OPTIONS.rewards, ...overrides.rewards } };
  const { size, winLength, rewards } = options;
  newBoard(size, winLength); // validates the options at definition time
  const observe = options.observation === 'compact' ? observeCompact : observeGrid;
  const turn = (state: State, agent: Player) => ({
    agent,
    observation: observe(state, agent),
    ...(options.legalMoves ? { actions: legalMoves(state.board) } : {}),
  });

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
    symmetries: ({ observation, action, agent }) => symmetricTurns(size, winLength, observe, observation, action, agent as Player),
    reset: (ctx) => {
      ctx.state = { board: newBoard(ctx.task.size, ctx.task.winLength), toMove: 'black', lastMove: null };
      return turn(ctx.state, 'black');
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
      return { rewards: {}, terminated: false, info: moveInfo, next: turn(state, opponent) };
    },
    bots: {
      scripted: (_observation, ctx, agent) => {
        const m = scriptedMove(ctx.state.board, STONE[agent], ctx.rng, options.botRandomness);
        return formatMove(m.row, m.col);
      },
      expert: (_observation, ctx, agent) => {
        const m = expertMove(ctx.state.board, STONE[agent], ctx.rng, options.expertExplore);
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
