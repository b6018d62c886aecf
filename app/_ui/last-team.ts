const KEY = 'whetstone.team';

/** The team last opened in this browser, so that / opens it again. */
export function rememberTeam(teamId: string): void {
  try {
    window.localStorage.setItem(KEY, teamId);
  } catch {
    // Storage may be unavailable (private mode, quota); the URL still carries the team.
  }
}

export function lastTeam(): string | null {
  try {
    return window.localStorage.getItem(KEY);
  } catch {
    return null;
  }
}
