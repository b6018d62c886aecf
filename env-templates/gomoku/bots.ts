/**
 * Opponents for Gomoku. The scripted bot follows OpenTinker's: with probability `randomness` a
 * random move; otherwise win if it can, block the opponent's win if it must, else the cell with
 * the most adjacent own stones, nudged towards the centre.
 */
import type { Rng } from 'whetstone';
import { type Board, EMPTY, type Stone, at, inside, lineLength } from './board';

function emptyCells(board: Board): number[] {
  const out: number[] = [];
  for (let i = 0; i < board.cells.length; i++) if (board.cells[i] === EMPTY) out.push(i);
  return out;
}

export function randomMove(board: Board, rng: Rng): { row: number; col: number } {
  const cell = rng.pick(emptyCells(board));
  return { row: Math.floor(cell / board.size), col: cell % board.size };
}

export function scriptedMove(board: Board, me: Stone, rng: Rng, randomness = 0.3): { row: number; col: number } {
  if (rng.bool(randomness)) return randomMove(board, rng);
  const them: Stone = me === 1 ? 2 : 1;
  const empty = emptyCells(board);
  const toMove = (cell: number) => ({ row: Math.floor(cell / board.size), col: cell % board.size });
  const completes = (cell: number, stone: Stone) => lineLength(board, Math.floor(cell / board.size), cell % board.size, stone) >= board.winLength;

  const win = empty.find((cell) => completes(cell, me));
  if (win !== undefined) return toMove(win);
  const block = empty.find((cell) => completes(cell, them));
  if (block !== undefined) return toMove(block);

  const centre = (board.size - 1) / 2;
  let best = -Infinity;
  let choices: number[] = [];
  for (const cell of empty) {
    const row = Math.floor(cell / board.size);
    const col = cell % board.size;
    let adjacent = 0;
    for (let dr = -1; dr <= 1; dr++) {
      for (let dc = -1; dc <= 1; dc++) {
        if ((dr || dc) && inside(board, row + dr, col + dc) && at(board, row + dr, col + dc) === me) adjacent++;
      }
    }
    // The centre nudge stays below one adjacent stone, so it only breaks ties.
    const score = adjacent - (Math.abs(row - centre) + Math.abs(col - centre)) / (2 * board.size);
    if (score > best + 1e-9) {
      best = score;
      choices = [cell];
    } else if (Math.abs(score - best) <= 1e-9) choices.push(cell);
  }
  return toMove(rng.pick(choices));
}

/** Line values by run length (the stones in a row through the cell, the cell included) and open ends. */
const LINE_VALUE: Record<number, [number, number, number]> = {
  // [no open end, one, two]
  1: [0, 1, 10],
  2: [0, 10, 100],
  3: [0, 100, 1_000],
  4: [0, 1_000, 10_000],
};
const DIRECTIONS = [[0, 1], [1, 0], [1, 1], [1, -1]] as const;

/** How much a stone of `stone` at the empty cell (row, col) is worth to `stone`'s lines. */
function cellValue(board: Board, row: number, col: number, stone: Stone): number {
  let value = 0;
  for (const [dr, dc] of DIRECTIONS) {
    let run = 1;
    let open = 0;
    for (const sign of [1, -1]) {
      let r = row + sign * dr;
      let c = col + sign * dc;
      while (inside(board, r, c) && at(board, r, c) === stone) {
        run++;
        r += sign * dr;
        c += sign * dc;
      }
      if (inside(board, r, c) && at(board, r, c) === EMPTY) open++;
    }
    value += run >= board.winLength ? 1_000_000 : LINE_VALUE[Math.min(run, 4)][open];
  }
  return value;
}

/** Whether a stone lies within two cells of (row, col) in any direction. */
function nearStone(board: Board, row: number, col: number): boolean {
  for (let dr = -2; dr <= 2; dr++) {
    for (let dc = -2; dc <= 2; dc++) if ((dr || dc) && inside(board, row + dr, col + dc) && at(board, row + dr, col + dc) !== EMPTY) return true;
  }
  return false;
}

/**
 * A stronger opponent and a teacher for warm starts: every empty cell scored by the lines it makes
 * for itself (attack, weighted a little higher so that a win beats a block) and the lines it breaks
 * for the opponent (defence), open ends counted; ties broken at random, so that its games differ.
 * With probability `explore`, when nothing is urgent (no four and no open three on the board), a
 * random cell near the stones instead: a teacher whose games cover more positions than its own
 * best line, so that an imitating policy has seen boards it will meet against other players.
 */
export function expertMove(board: Board, me: Stone, rng: Rng, explore = 0): { row: number; col: number } {
  const them: Stone = me === 1 ? 2 : 1;
  let best = -Infinity;
  let choices: number[] = [];
  // Only cells near a stone can matter (and scoring every cell is slow in the sandbox's interpreter).
  const near = emptyCells(board).filter((cell) => nearStone(board, Math.floor(cell / board.size), cell % board.size));
  for (const cell of near.length > 0 ? near : emptyCells(board)) {
    const row = Math.floor(cell / board.size);
    const col = cell % board.size;
    const score = 1.1 * cellValue(board, row, col, me) + cellValue(board, row, col, them);
    if (score > best + 1e-9) {
      best = score;
      choices = [cell];
    } else if (Math.abs(score - best) <= 1e-9) choices.push(cell);
  }
  const urgent = best >= 1_000;
  const pool = near.length > 0 ? near : emptyCells(board);
  const cell = !urgent && explore > 0 && rng.bool(explore) ? rng.pick(pool) : rng.pick(choices);
  return { row: Math.floor(cell / board.size), col: cell % board.size };
}
