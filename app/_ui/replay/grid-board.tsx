import { memo } from 'react';
import { type Board, cellName } from './grid-game';

const CELL = 32;
const MARGIN = 26;

/**
 * A grid game's board as SVG: stones of the seats (first seat dark, second light), row and
 * column numbers as the environment counts them, the last move marked, the winning line drawn,
 * optional move numbers on the stones. `flipped` turns it half a turn (the other seat's view).
 * It scales to its box; the move list beside it is the accessible form of the game, so the
 * picture carries one summary label.
 */
export function GridBoard({
  board,
  last,
  line,
  numbers,
  flipped = false,
  label,
}: {
  board: Board;
  last: { row: number; col: number } | null;
  line: Array<[number, number]> | null;
  /** Move number of each occupied cell, "row,col" → n, when numbers are shown. */
  numbers?: Map<string, number>;
  flipped?: boolean;
  label: string;
}) {
  const n = board.length;
  const side = MARGIN + n * CELL + 6;
  // Where cell (row, col) is drawn: its centre.
  const at = (row: number, col: number) => {
    const r = flipped ? n - 1 - row : row;
    const c = flipped ? n - 1 - col : col;
    return { x: MARGIN + c * CELL + CELL / 2, y: MARGIN + r * CELL + CELL / 2 };
  };
  return (
    <svg className="grid-board" viewBox={`0 0 ${side} ${side}`} role="img" aria-label={label}>
      <GridLines n={n} flipped={flipped} />
      {line && line.length > 1 ? (
        <line
          className="grid-board-win"
          x1={at(...line[0]).x}
          y1={at(...line[0]).y}
          x2={at(...line[line.length - 1]).x}
          y2={at(...line[line.length - 1]).y}
        />
      ) : null}
      {board.flatMap((cells, row) =>
        cells.map((who, col) => {
          if (who < 0) return null;
          const { x, y } = at(row, col);
          const key = cellName({ row, col });
          return <Stone key={key} x={x} y={y} dark={who === 0} number={numbers?.get(key)} isLast={last !== null && last.row === row && last.col === col} />;
        }),
      )}
    </svg>
  );
}

/**
 * The board's lines and coordinates: the same at every move, so a step through a game draws only
 * the stones that changed (the replay's step stays within a frame on a full 9 × 9 game).
 */
const GridLines = memo(function GridLines({ n, flipped }: { n: number; flipped: boolean }) {
  const indices = Array.from({ length: n }, (_, i) => i);
  const centre = (i: number) => MARGIN + (flipped ? n - 1 - i : i) * CELL + CELL / 2;
  return (
    <>
      <rect className="grid-board-bg" x={MARGIN} y={MARGIN} width={n * CELL} height={n * CELL} rx={3} />
      {indices.map((i) => (
        <g key={i}>
          <line className="grid-board-line" x1={MARGIN + i * CELL} y1={MARGIN} x2={MARGIN + i * CELL} y2={MARGIN + n * CELL} />
          <line className="grid-board-line" x1={MARGIN} y1={MARGIN + i * CELL} x2={MARGIN + n * CELL} y2={MARGIN + i * CELL} />
        </g>
      ))}
      <rect className="grid-board-edge" x={MARGIN} y={MARGIN} width={n * CELL} height={n * CELL} rx={3} />
      {indices.map((i) => (
        <g key={`label-${i}`} className="grid-board-coord" aria-hidden="true">
          <text x={centre(i)} y={MARGIN - 9} textAnchor="middle">
            {i + 1}
          </text>
          <text x={MARGIN - 8} y={centre(i) + 4} textAnchor="end">
            {i + 1}
          </text>
        </g>
      ))}
    </>
  );
});

/** One stone, drawn again only when it, its number or its last-move mark changes. */
const Stone = memo(function Stone({ x, y, dark, number, isLast }: { x: number; y: number; dark: boolean; number: number | undefined; isLast: boolean }) {
  return (
    <g className={`grid-stone grid-stone-${dark ? 'dark' : 'light'}`}>
      <circle cx={x} cy={y} r={CELL * 0.42} />
      {number !== undefined ? (
        <text x={x} y={y + 4} textAnchor="middle">
          {number}
        </text>
      ) : null}
      {isLast && number === undefined ? <circle className="grid-stone-last" cx={x} cy={y} r={CELL * 0.12} /> : null}
      {isLast && number !== undefined ? <circle className="grid-stone-last-ring" cx={x} cy={y} r={CELL * 0.46} /> : null}
    </g>
  );
});
