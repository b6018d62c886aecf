'use client';
import type { ReactNode } from 'react';
import { Pager } from './pager';

/** One column of a DataTable: its header and what each row shows in it. */
export interface Column<T> {
  header: string;
  cell: (row: T) => ReactNode;
  /** Right-aligned figures. */
  num?: boolean;
  /** Classes of each body cell (e.g. 'nowrap muted small'). */
  className?: string;
  /** A tooltip per cell (e.g. the exact time behind "3 minutes ago"). */
  title?: (row: T) => string | undefined;
  /** This column's cell names the row (a row header for screen readers); the first such column. */
  rowHeader?: boolean;
}

/**
 * The list pages' table: a labelled table with a header row, one row per item (the row-header
 * column names it for screen readers), an optional pager below, in a scrolling wrapper; `empty`
 * shows instead when there are no rows. Cells render what `cell` returns: text stays text.
 */
export function DataTable<T>({
  label,
  columns,
  rows,
  rowKey,
  empty,
  pager,
  panel = false,
  footer,
}: {
  label: string;
  columns: Column<T>[];
  rows: T[];
  rowKey: (row: T) => string;
  empty?: ReactNode;
  pager?: { page: number; pageSize: number; total: number; onPage: (page: number) => void; label: string };
  /** Drawn as a panel of its own (a page's main list) rather than inside one. */
  panel?: boolean;
  footer?: ReactNode;
}) {
  if (rows.length === 0 && empty !== undefined) return <>{empty}</>;
  const headerIndex = Math.max(0, columns.findIndex((c) => c.rowHeader));
  return (
    <div className={panel ? 'panel table-wrap' : 'table-wrap'}>
      <table className="table" aria-label={label}>
        <thead>
          <tr>
            {columns.map((c) => (
              <th key={c.header} scope="col" className={c.num ? 'num' : undefined}>
                {c.header}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr key={rowKey(row)}>
              {columns.map((c, i) => {
                const className = [c.num ? 'num' : '', c.className ?? ''].join(' ').trim() || undefined;
                const title = c.title?.(row);
                return i === headerIndex ? (
                  <th key={c.header} scope="row" className={className} title={title}>
                    {c.cell(row)}
                  </th>
                ) : (
                  <td key={c.header} className={className} title={title}>
                    {c.cell(row)}
                  </td>
                );
              })}
            </tr>
          ))}
        </tbody>
      </table>
      {footer}
      {pager ? <Pager {...pager} /> : null}
    </div>
  );
}
