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
  const indices = Array.from({ length: n }, (_, i) => i);
  return (
    <svg className="grid-board" viewBox={`0 0 ${side} ${side}`} role="img" aria-label={label}>
      <rect className="grid-board-bg" x={MARGIN} y={MARGIN} width={n * CELL} height={n * CELL} rx={3} />
      {indices.map((i) => (
        <g key={i}>
          <line className="grid-board-line" x1={MARGIN + i * CELL} y1={MARGIN} x2={MARGIN + i * CELL} y2={MARGIN + n * CELL} />
          <line className="grid-board-line" x1={MARGIN} y1={MARGIN + i * CELL} x2={MARGIN + n * CELL} y2={MARGIN + i * CELL} />
        </g>
      ))}
      <rect className="grid-board-edge" x={MARGIN} y={MARGIN} width={n * CELL} height={n * CELL} rx={3} />
      {indices.map((i) => {
        const { x } = at(0, i);
        const { y } = at(i, 0);
        return (
          <g key={`label-${i}`} className="grid-board-coord" aria-hidden="true">
            <text x={x} y={MARGIN - 9} textAnchor="middle">
              {i + 1}
            </text>
            <text x={MARGIN - 8} y={y + 4} textAnchor="end">
              {i + 1}
            </text>
          </g>
        );
      })}
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
          const number = numbers?.get(key);
          const isLast = last && last.row === row && last.col === col;
          return (
            <g key={key} className={`grid-stone grid-stone-${who === 0 ? 'dark' : 'light'}`}>
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
        }),
      )}
    </svg>
  );
}
