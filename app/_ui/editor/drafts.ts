// Unsaved edits survive a reload: kept in this browser (localStorage) per environment until a
// save makes them a version or the user discards them.

export interface Draft {
  /** The version the edits started from. */
  baseVersionId: string;
  baseVersion: number;
  /** Every file, `manifest.json` included, as text. */
  files: Record<string, string>;
  savedAt: number;
}

const key = (environmentId: string) => `whetstone:draft:${environmentId}`;

export function loadDraft(environmentId: string): Draft | null {
  try {
    const raw = localStorage.getItem(key(environmentId));
    if (!raw) return null;
    const draft = JSON.parse(raw) as Draft;
    return typeof draft.baseVersionId === 'string' && draft.files && typeof draft.files === 'object' ? draft : null;
  } catch {
    return null;
  }
}

export function saveDraft(environmentId: string, draft: Draft): void {
  try {
    localStorage.setItem(key(environmentId), JSON.stringify(draft));
  } catch {
    // Storage full or disabled: the edits stay in the page; the unsaved-changes guard still warns.
  }
}

export function clearDraft(environmentId: string): void {
  try {
    localStorage.removeItem(key(environmentId));
  } catch {
    // nothing to clear
  }
}

/** Files of a version as the editor shows them: the code plus `manifest.json`. */
export function versionFiles(version: { files: unknown; manifest: unknown }): Record<string, string> {
  return { ...(version.files as Record<string, string>), 'manifest.json': `${JSON.stringify(version.manifest, null, 2)}\n` };
}

export function sameFiles(a: Record<string, string>, b: Record<string, string>): boolean {
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => a[k] === b[k]);
}
