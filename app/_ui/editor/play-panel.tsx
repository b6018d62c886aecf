'use client';
// Replaced by the play console once the play API lands (work in progress in this session).
export function PlayPanel(_: { teamId: string; versionId: string; dirty: boolean }) {
  return <div className="side-body"><p className="muted">Play console: coming in this change.</p></div>;
}
