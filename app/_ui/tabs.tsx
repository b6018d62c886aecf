'use client';
import { useRef, type KeyboardEvent, type ReactNode } from 'react';

export interface TabItem {
  id: string;
  label: string;
  /** A count or mark after the label. */
  badge?: ReactNode;
}

/**
 * A row of tabs (WAI-ARIA tabs pattern): ← → Home End move between them, the current one is the
 * only one in the tab order. The caller renders the panel as `tabPanelProps(idPrefix, current)`.
 */
export function Tabs({ tabs, current, onChange, label, idPrefix }: { tabs: TabItem[]; current: string; onChange: (id: string) => void; label: string; idPrefix: string }) {
  const refs = useRef<Record<string, HTMLButtonElement | null>>({});
  const move = (e: KeyboardEvent, index: number) => {
    const to =
      e.key === 'ArrowRight' ? (index + 1) % tabs.length :
      e.key === 'ArrowLeft' ? (index - 1 + tabs.length) % tabs.length :
      e.key === 'Home' ? 0 :
      e.key === 'End' ? tabs.length - 1 :
      null;
    if (to === null) return;
    e.preventDefault();
    onChange(tabs[to].id);
    refs.current[tabs[to].id]?.focus();
  };
  return (
    <div className="tabs" role="tablist" aria-label={label}>
      {tabs.map((t, i) => (
        <button
          key={t.id}
          ref={(el) => {
            refs.current[t.id] = el;
          }}
          type="button"
          role="tab"
          id={`${idPrefix}-tab-${t.id}`}
          aria-selected={t.id === current}
          aria-controls={`${idPrefix}-panel-${t.id}`}
          tabIndex={t.id === current ? 0 : -1}
          onClick={() => onChange(t.id)}
          onKeyDown={(e) => move(e, i)}
        >
          {t.label}
          {t.badge !== undefined ? <span className="tab-badge">{t.badge}</span> : null}
        </button>
      ))}
    </div>
  );
}

export function tabPanelProps(idPrefix: string, current: string) {
  return { role: 'tabpanel', id: `${idPrefix}-panel-${current}`, 'aria-labelledby': `${idPrefix}-tab-${current}`, tabIndex: 0 } as const;
}
