'use client';
import { formatRelative } from '../format';
import { StatusBadge } from '../components';

export interface VersionRow {
  id: string;
  version: number;
  contentHash: string;
  validationStatus: string;
  createdAt: Date | string;
}

/** Every version, newest first: open one, compare any two side by side. */
export function HistoryPanel({
  versions,
  current,
  compare,
  onOpen,
  onCompare,
}: {
  versions: VersionRow[];
  current: number;
  compare: [number, number] | null;
  onOpen: (version: number) => void;
  onCompare: (from: number, to: number) => void;
}) {
  return (
    <div className="side-body">
      <p className="muted small">
        Versions are immutable: a save that changes anything makes the next one. Compare shows the differences with the version open in the editor.
      </p>
      <ol className="versions" reversed>
        {versions.map((v) => (
          <li key={v.id} className={v.version === current ? 'versions-current' : undefined}>
            <div>
              <strong>v{v.version}</strong> <StatusBadge status={v.validationStatus} />
              <div className="muted small">
                <span className="mono">{v.contentHash.slice(0, 10)}</span> · {formatRelative(v.createdAt)}
              </div>
            </div>
            <div className="row-actions">
              {v.version === current ? (
                <span className="muted small">open</span>
              ) : (
                <>
                  <button type="button" className="btn-small" onClick={() => onOpen(v.version)}>
                    Open
                  </button>
                  <button
                    type="button"
                    className="btn-small"
                    aria-pressed={compare?.[0] === v.version}
                    onClick={() => onCompare(v.version, current)}
                  >
                    Compare
                  </button>
                </>
              )}
            </div>
          </li>
        ))}
      </ol>
    </div>
  );
}
