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
