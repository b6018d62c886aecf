'use client';
import { Search } from 'lucide-react';
import { useUrlState } from './url-state';

/** A list's search box, kept in the URL's `q` (a link opens the same filtered list); typing replaces the history entry. */
export function SearchField({ label, placeholder = 'Search by name or description' }: { label: string; placeholder?: string }) {
  const { params, set } = useUrlState();
  return (
    <div className="toolbar">
      <label className="search-field">
        <Search size={15} aria-hidden="true" />
        <span className="sr-only">{label}</span>
        <input type="search" placeholder={placeholder} value={params.get('q') ?? ''} onChange={(e) => set({ q: e.target.value }, { replace: true })} />
      </label>
    </div>
  );
}
