/** A `next` parameter is followed only to a path on this site (no open redirects). */
export function safeNext(next: string | null): string | null {
  if (!next || !next.startsWith('/') || next.startsWith('//') || next.startsWith('/\\')) return null;
  return next;
}

/** better-auth answers `{ error: { message, status } }`; some errors carry only a status. */
export function authErrorMessage(error: { message?: string; status?: number; statusText?: string } | null | undefined): string {
  if (!error) return '';
  if (error.message) return error.message;
  if (error.status === 429) return 'Too many attempts. Wait a minute and try again.';
  return error.statusText || `The server refused (${error.status ?? 'no answer'}).`;
}
