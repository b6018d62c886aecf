/** Usage against a limit as a bar that turns amber near the limit and red at it. */
export function Meter({ label, used, limit, format = String }: { label: string; used: number; limit: number; format?: (n: number) => string }) {
  const share = limit > 0 ? Math.min(1, used / limit) : used > 0 ? 1 : 0;
  return (
    <div className="meter">
      <div className="meter-head">
        <span>{label}</span>
        <span className="tabular">
          {format(used)} of {format(limit)}
        </span>
      </div>
      <div
        className={`meter-bar ${share >= 1 ? 'meter-full' : share >= 0.8 ? 'meter-high' : ''}`}
        role="meter"
        aria-label={label}
        aria-valuemin={0}
        aria-valuemax={limit}
        aria-valuenow={used}
      >
        <span style={{ width: `${share * 100}%` }} />
      </div>
    </div>
  );
}
