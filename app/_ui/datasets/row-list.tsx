/**
 * Rows of a dataset, numbered from `offset + 1`. Rows are other people's data: each is shown as
 * its JSON text, never as markup.
 */
export function RowList({ rows, offset }: { rows: unknown[]; offset: number }) {
  return (
    <ol className="rows" aria-label={`Rows ${offset + 1} to ${offset + rows.length}`}>
      {rows.map((row, i) => (
        <li key={offset + i}>
          <span className="row-index">{offset + i + 1}</span>
          <pre className="row-text">{JSON.stringify(row, null, 2)}</pre>
        </li>
      ))}
    </ol>
  );
}
