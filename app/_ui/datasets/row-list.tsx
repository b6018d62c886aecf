/**
 * Rows of a dataset, numbered from `offset + 1`. Rows are other people's data: each is shown as
 * its JSON text, never as markup; `compact` writes each on one line (a narrow pane).
 */
export function RowList({ rows, offset, compact = false }: { rows: unknown[]; offset: number; compact?: boolean }) {
  return (
    <ol className="rows" aria-label={`Rows ${offset + 1} to ${offset + rows.length}`}>
      {rows.map((row, i) => (
        <li key={offset + i}>
          <span className="row-index">{offset + i + 1}</span>
          <pre className="row-text">{compact ? JSON.stringify(row) : JSON.stringify(row, null, 2)}</pre>
        </li>
      ))}
    </ol>
  );
}
