/**
 * A recorded game on a grid (gomoku at any size and win length, tic-tac-toe-like environments a
 * user writes), read from a match: the positions after each move, the winning line, and the
 * moves that threw a game away. Pure, so the replay, its tests and any later analysis agree.
 *
 * Conventions the grid environments follow (env-templates/gomoku): the task names `size` and
 * `winLength`; each move's `info.move` is `[row, col]`, counted from 1; seats take turns in the
 * order of the match's agents.
 */

export interface GridMove {
  /** 0-based index in the match's moves. */
  index: number;
  agent: string;
  /** 0-based cell, or null when the move placed nothing (an invalid move that ended the game). */
  cell: { row: number; col: number } | null;
  text: string;
  byBot: boolean;
  rewards: Record<string, number>;
  info: Record<string, unknown>;
}

export interface GridGame {
  size: number;
  /** Stones in a row that win, or null when the match does not say. */
  winLength: number | null;
  agents: string[];
  moves: GridMove[];
}

/** A board: -1 empty, else the index of the agent whose stone it is. */
export type Board = number[][];

/** Why a move is marked: it missed its own win in one, or left the opponent's win in one open. */
export type Blunder = 'missed-win' | 'missed-block';

type MatchLike = {
  agents: unknown;
  moves: unknown;
  result: unknown;
};

const record = (v: unknown): Record<string, unknown> => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {});
const smallInt = (v: unknown, lo: number, hi: number): number | null => (typeof v === 'number' && Number.isInteger(v) && v >= lo && v <= hi ? v : null);

/** The game of a match, or null when its moves do not place stones on a grid. */
export function gridGameOf(match: MatchLike): GridGame | null {
  const agents = (Array.isArray(match.agents) ? match.agents : []).map((a) => String(record(a).name ?? '')).filter(Boolean);
  const rawMoves = Array.isArray(match.moves) ? match.moves : [];
  const task = record(record(match.result).task);
  const moves: GridMove[] = rawMoves.map((raw, index) => {
    const m = record(raw);
    const info = record(m.info);
    const at = Array.isArray(info.move) && info.move.length === 2 ? info.move : null;
    const row = at ? smallInt(at[0], 1, 64) : null;
    const col = at ? smallInt(at[1], 1, 64) : null;
    const rewards = Object.fromEntries(Object.entries(record(m.rewards)).filter(([, v]) => typeof v === 'number')) as Record<string, number>;
    return {
      index,
      agent: String(m.agent ?? ''),
      cell: row !== null && col !== null ? { row: row - 1, col: col - 1 } : null,
      text: typeof m.text === 'string' ? m.text : '',
      byBot: m.byBot === true,
      rewards,
      info,
    };
  });
  // A grid game: the task names its size, or (a match recorded before tasks were) its moves place stones.
  const largest = Math.max(0, ...moves.map((m) => (m.cell ? Math.max(m.cell.row, m.cell.col) + 1 : 0)));
  const size = smallInt(task.size, 3, 64) ?? (largest >= 3 ? largest : null);
  if (agents.length === 0 || size === null || largest > size) return null;
  const winLength = smallInt(task.winLength, 2, size);
  return { size, winLength, agents, moves };
}

/** The board after the first `count` moves. */
export function positionAfter(game: GridGame, count: number): Board {
  const board: Board = Array.from({ length: game.size }, () => Array<number>(game.size).fill(-1));
  for (const m of game.moves.slice(0, count)) {
    if (m.cell) board[m.cell.row][m.cell.col] = game.agents.indexOf(m.agent);
  }
  return board;
}

const DIRECTIONS = [
  [0, 1],
  [1, 0],
  [1, 1],
  [1, -1],
] as const;

/** The longest run of `who`'s stones through (row, col) in each direction, as cells, if it reaches `winLength`. */
function lineThrough(board: Board, row: number, col: number, who: number, winLength: number): Array<[number, number]> | null {
  const n = board.length;
  for (const [dr, dc] of DIRECTIONS) {
    const cells: Array<[number, number]> = [[row, col]];
    for (const sign of [1, -1]) {
      let r = row + sign * dr;
      let c = col + sign * dc;
      while (r >= 0 && r < n && c >= 0 && c < n && board[r][c] === who) {
        cells.push([r, c]);
        r += sign * dr;
        c += sign * dc;
      }
    }
    if (cells.length >= winLength) return cells.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  }
  return null;
}

/** The winning line the last of the first `count` moves made, if it made one. */
export function winningLine(game: GridGame, count: number): Array<[number, number]> | null {
  if (!game.winLength || count === 0) return null;
  const last = game.moves[count - 1];
  if (!last.cell) return null;
  const board = positionAfter(game, count);
  return lineThrough(board, last.cell.row, last.cell.col, game.agents.indexOf(last.agent), game.winLength);
}

/** Empty cells where `who` would win at once. */
export function winsInOne(board: Board, who: number, winLength: number): Array<[number, number]> {
  const cells: Array<[number, number]> = [];
  for (let r = 0; r < board.length; r++) {
    for (let c = 0; c < board.length; c++) {
      if (board[r][c] !== -1) continue;
      board[r][c] = who;
      if (lineThrough(board, r, c, who, winLength)) cells.push([r, c]);
      board[r][c] = -1;
    }
  }
  return cells;
}

/**
 * The moves that threw a game away, exactly: a move whose player could have won at once and did
 * not (missed-win), or, failing that, whose opponent could win at once and the move neither won
 * nor took one of the opponent's winning cells (missed-block). Two-player games only.
 */
export function blunders(game: GridGame): Map<number, Blunder> {
  const marks = new Map<number, Blunder>();
  if (!game.winLength || game.agents.length !== 2) return marks;
  const board = positionAfter(game, 0);
  for (const move of game.moves) {
    const me = game.agents.indexOf(move.agent);
    if (me < 0 || !move.cell) continue;
    const { row, col } = move.cell;
    const mine = winsInOne(board, me, game.winLength);
    const theirs = winsInOne(board, 1 - me, game.winLength);
    const took = (cells: Array<[number, number]>) => cells.some(([r, c]) => r === row && c === col);
    if (mine.length > 0 && !took(mine)) marks.set(move.index, 'missed-win');
    else if (mine.length === 0 && theirs.length > 0 && !took(theirs)) marks.set(move.index, 'missed-block');
    board[row][col] = me;
  }
  return marks;
}

/** A cell as the environment writes moves: "row,col", counted from 1. */
export function cellName(cell: { row: number; col: number }): string {
  return `${cell.row + 1},${cell.col + 1}`;
}
