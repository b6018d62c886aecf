import { describe, expect, it } from 'vitest';
import { blunders, cellName, gridGameOf, positionAfter, winningLine, winsInOne } from './grid-game';

/** A match as the runner records it, from moves written "row,col" (1-based), black first. */
function match(moves: string[], task: Record<string, unknown> = { size: 5, winLength: 3 }) {
  return {
    agents: [
      { name: 'black', policy: 'learner' },
      { name: 'white', policy: 'bot:scripted' },
    ],
    moves: moves.map((m, i) => {
      const [row, col] = m.split(',').map(Number);
      return { index: i, agent: i % 2 === 0 ? 'black' : 'white', text: `<move>${m}</move>`, byBot: i % 2 === 1, rewards: {}, info: { move: [row, col] } };
    }),
    result: { endReason: 'terminated', returns: {}, task },
  };
}

describe('grid games from matches', () => {
  it('reads size, win length, seats and 0-based cells; positions follow the moves', () => {
    const game = gridGameOf(match(['1,1', '2,2', '1,2']))!;
    expect(game).toMatchObject({ size: 5, winLength: 3, agents: ['black', 'white'] });
    expect(game.moves.map((m) => m.cell)).toEqual([
      { row: 0, col: 0 },
      { row: 1, col: 1 },
      { row: 0, col: 1 },
    ]);
    const board = positionAfter(game, 2);
    expect(board[0][0]).toBe(0);
    expect(board[1][1]).toBe(1);
    expect(board[0][1]).toBe(-1);
    expect(cellName(game.moves[2].cell!)).toBe('1,2');
  });

  it('a match without a task takes its size from the moves and names no win length', () => {
    const game = gridGameOf(match(['1,1', '4,3'], {}))!;
    expect(game).toMatchObject({ size: 4, winLength: null });
    expect(blunders(game).size).toBe(0);
  });

  it('a grid game whose only move placed nothing (an invalid first move) still has its board', () => {
    const m = match(['1,1']);
    const invalid = { ...m, moves: [{ ...m.moves[0], info: {} }] };
    expect(gridGameOf(invalid)).toMatchObject({ size: 5, moves: [{ cell: null }] });
  });

  it('is not a grid game when no move places a stone and no task names a size, or a move falls off the board', () => {
    expect(gridGameOf({ agents: [{ name: 'a' }], moves: [{ agent: 'a', text: 'hello', info: {} }], result: {} })).toBeNull();
    expect(gridGameOf(match(['1,1', '6,6']))).toBeNull();
  });

  it('finds the winning line of the last move, and none before it', () => {
    // Black: 1,1 1,2 1,3 (three in a row on a 5 × 5 board, three to win).
    const game = gridGameOf(match(['1,1', '3,3', '1,2', '4,4', '1,3']))!;
    expect(winningLine(game, 5)).toEqual([
      [0, 0],
      [0, 1],
      [0, 2],
    ]);
    expect(winningLine(game, 4)).toBeNull();
  });

  it('"or more in a row" wins: a stone that joins two lines into a longer one', () => {
    const game = gridGameOf(match(['1,1', '5,5', '1,2', '5,4', '1,4', '4,5', '1,3'], { size: 5, winLength: 4 }))!;
    expect(winningLine(game, 7)).toHaveLength(4);
  });

  it('wins in one: every empty cell that completes a line', () => {
    const board = positionAfter(gridGameOf(match(['2,1', '5,5', '2,2']))!, 3);
    expect(winsInOne(board, 0, 3)).toEqual([[1, 2]]);
    expect(winsInOne(board, 1, 3)).toEqual([]);
  });

  // Seven by seven, four in a row: black builds an open three on row 2 (wins at 2,1 and 2,5).
  const OPEN_THREE = ['2,2', '7,7', '2,3', '7,6', '2,4'];
  const SEVEN = { size: 7, winLength: 4 };

  it('marks a move that missed its own win in one', () => {
    // White blocks one end (not marked: it took one of black's winning cells); black plays elsewhere.
    const game = gridGameOf(match([...OPEN_THREE, '2,1', '5,5'], SEVEN))!;
    expect([...blunders(game)]).toEqual([[6, 'missed-win']]);
  });

  it('marks a move that left the opponent a win in one', () => {
    const game = gridGameOf(match([...OPEN_THREE, '4,4', '2,5'], SEVEN))!;
    expect([...blunders(game)]).toEqual([[5, 'missed-block']]);
  });

  it('winning at once is never a blunder, even with the opponent threatening too', () => {
    // White answers the open three with a three of its own (threatening 7,4); black wins at 2,5.
    const game = gridGameOf(match([...OPEN_THREE, '7,5', '2,5'], SEVEN))!;
    expect([...blunders(game)]).toEqual([[5, 'missed-block']]);
    expect(winningLine(game, 7)).toHaveLength(4);
  });
});
