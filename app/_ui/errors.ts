/**
 * A readable message from whatever a tRPC call or better-auth threw. Invalid input comes back
 * from the server as BAD_REQUEST with zod's issues; those read better one per field.
 */
export function errorMessage(error: unknown): string {
  if (!error) return '';
  if (typeof error === 'object') {
    const data = (error as { data?: { issues?: unknown; httpStatus?: number } }).data;
    const issues = data?.issues;
    if (Array.isArray(issues) && issues.length > 0) {
      return issues
        .map((issue: { path?: unknown[]; message?: string }) => {
          const field = issue.path?.filter((p) => typeof p === 'string').join('.');
          return field ? `${humanField(field)}: ${issue.message}` : (issue.message ?? 'Invalid input');
        })
        .join('; ');
    }
    const message = (error as { message?: unknown }).message;
    if (typeof message === 'string' && message) {
      if (message === 'Failed to fetch') return 'The server did not answer. Check that Whetstone is running.';
      return message;
    }
  }
  return String(error);
}

/** True when a tRPC error means "no such thing, or not yours": the team gate answers so. */
export function isNotFound(error: unknown): boolean {
  const data = (error as { data?: { code?: string } } | null)?.data;
  return data?.code === 'NOT_FOUND';
}

export function httpStatusOf(error: unknown): number | undefined {
  return (error as { data?: { httpStatus?: number } } | null)?.data?.httpStatus;
}

function humanField(field: string): string {
  const spaced = field.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase();
  return spaced.charAt(0).toUpperCase() + spaced.slice(1);
}
