'use client';
import { ChevronLeft, ChevronRight } from 'lucide-react';

/** Previous / next through a paged list, with where the page is in the whole ("21–40 of 95"). */
export function Pager({ page, pageSize, total, onPage, label }: { page: number; pageSize: number; total: number; onPage: (page: number) => void; label: string }) {
  const pages = Math.max(1, Math.ceil(total / pageSize));
  if (total <= pageSize && page === 1) return null;
  const first = total === 0 ? 0 : (page - 1) * pageSize + 1;
  const last = Math.min(total, page * pageSize);
  return (
    <nav className="pager" aria-label={label}>
      <button type="button" className="btn btn-small" onClick={() => onPage(page - 1)} disabled={page <= 1}>
        <ChevronLeft size={15} aria-hidden="true" /> Previous
      </button>
      <span className="muted small tabular" aria-live="polite">
        {first}–{last} of {total} · page {page} of {pages}
      </span>
      <button type="button" className="btn btn-small" onClick={() => onPage(page + 1)} disabled={page >= pages}>
        Next <ChevronRight size={15} aria-hidden="true" />
      </button>
    </nav>
  );
}
