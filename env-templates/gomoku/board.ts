/**
 * Gomoku rules: a square board, two players alternating, the first to make `winLength` or more
 * stones in a row (overlines win, as in OpenTinker's free-style variant) wins; a full board is a draw.
 */
export type Stone = 0 | 1 | 2; // empty, black, white
export const EMPTY = 0;
export const BLACK = 1;
export const WHITE = 2;
const SYMBOLS = ['.', 'X', 'O'] as const;

export interface Board {
  size: number;
  winLength: number;
  /** Row-major cells. */
  cells: Stone[];
  moves: number;
}

export function newBoard(size: number, winLength: number): Board {
  if (!Number.isInteger(size) || size < 3 || size > 19) throw new RangeError(`board size must be 3..19, got ${size}`);
  if (!Number.isInteger(winLength) || winLength < 3 || winLength > size) throw new RangeError(`win length must be 3..${size}, got ${winLength}`);
  return { size, winLength, cells: new Array<Stone>(size * size).fill(EMPTY), moves: 0 };
}

export function at(board: Board, row: number, col: number): Stone {
  return board.cells[row * board.size + col];
}

export function inside(board: Board, row: number, col: number): boolean {
  return row >= 0 && col >= 0 && row < board.size && col < board.size;
}

const DIRECTIONS = [
  [0, 1],
  [1, 0],
  [1, 1],
  [1, -1],
] as const;

/** The longest line through (row, col) that `stone` would make there. */
export function lineLength(board: Board, row: number, col: number, stone: Stone): number {
  let best = 0;
  for (const [dr, dc] of DIRECTIONS) {
    let n = 1;
    for (let r = row + dr, c = col + dc; inside(board, r, c) && at(board, r, c) === stone; r += dr, c += dc) n++;
    for (let r = row - dr, c = col - dc; inside(board, r, c) && at(board, r, c) === stone; r -= dr, c -= dc) n++;
    if (n > best) best = n;
  }
  return best;
}

/** Places a stone; returns whether it wins. The cell must be empty. */
export function place(board: Board, row: number, col: number, stone: Stone): boolean {
  board.cells[row * board.size + col] = stone;
  board.moves++;
  return lineLength(board, row, col, stone) >= board.winLength;
}

export function isFull(board: Board): boolean {
  return board.moves >= board.size * board.size;
}

/** The board as text, with 1-based row and column numbers, as the policy reads it. */
export function renderBoard(board: Board): string {
  // Plain loops and concatenation: several times faster than map/join in the QuickJS interpreter.
  const w = String(board.size).length;
  const pad = (s: string) => (s.length >= w ? s : ' '.repeat(w - s.length) + s);
  let out = ' '.repeat(w);
  for (let c = 1; c <= board.size; c++) out += ` ${pad(String(c))}`;
  for (let r = 0; r < board.size; r++) {
    out += `\n${pad(String(r + 1))}`;
    for (let c = 0; c < board.size; c++) out += ` ${pad(SYMBOLS[board.cells[r * board.size + c]])}`;
  }
  return out;
}

/** One line per row: its number, then its cells (`.`, `X`, `O`), with no spaces. */
export function renderCompact(board: Board): string {
  const w = String(board.size).length;
  let out = '';
  for (let r = 0; r < board.size; r++) {
    const label = String(r + 1);
    out += `${r === 0 ? '' : '\n'}${' '.repeat(w - label.length)}${label}`;
    for (let c = 0; c < board.size; c++) out += SYMBOLS[board.cells[r * board.size + c]];
  }
  return out;
}

/**
 * The 8 symmetries of a square board (the dihedral group: 4 rotations, each with or without a
 * reflection), as maps of 0-based (row, col); the first is the identity.
 */
export function symmetries(size: number): ((row: number, col: number) => [number, number])[] {
  const n = size - 1;
  return [
    (r, c) => [r, c],
    (r, c) => [c, n - r],
    (r, c) => [n - r, n - c],
    (r, c) => [n - c, r],
    (r, c) => [r, n - c],
    (r, c) => [n - r, c],
    (r, c) => [c, r],
    (r, c) => [n - c, n - r],
  ];
}

/** The board with every stone moved by `map` (one of `symmetries`). */
export function transformBoard(board: Board, map: (row: number, col: number) => [number, number]): Board {
  const out: Board = { ...board, cells: new Array<Stone>(board.cells.length).fill(EMPTY) };
  for (let r = 0; r < board.size; r++) {
    for (let c = 0; c < board.size; c++) {
      const [r2, c2] = map(r, c);
      out.cells[r2 * board.size + c2] = board.cells[r * board.size + c];
    }
  }
  return out;
}

/** The cells of a board as `renderBoard` or `renderCompact` wrote them (row lines after any header). */
export function readCells(rows: readonly string[], size: number): Stone[] {
  const cells: Stone[] = [];
  for (const line of rows) {
    // Compact rows are the label then the cells; grid rows are space-separated, label first.
    const symbols = line.includes(' ') && line.trim().split(/\s+/).length === size + 1 ? line.trim().split(/\s+/).slice(1) : line.slice(String(size).length).split('');
    if (symbols.length !== size) throw new Error(`not a board row of ${size} cells: "${line}"`);
    for (const s of symbols) {
      const stone = SYMBOLS.indexOf(s as (typeof SYMBOLS)[number]);
      if (stone < 0) throw new Error(`not a cell: "${s}" in "${line}"`);
      cells.push(stone as Stone);
    }
  }
  return cells;
}

/** The move syntax: `<move>row,col</move>`, 1-based. Returns 0-based coordinates, or the problem. */
export function parseMove(text: string): { row: number; col: number } | { problem: string } {
  const m = /<move>\s*(\d+)\s*,\s*(\d+)\s*<\/move>/.exec(text);
  if (!m) return { problem: 'no <move>row,col</move> found' };
  return { row: Number(m[1]) - 1, col: Number(m[2]) - 1 };
}

export function formatMove(row: number, col: number): string {
  return `<move>${row + 1},${col + 1}</move>`;
}
