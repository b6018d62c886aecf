const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
const dateOnly = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium' });

export function formatDateTime(value: Date | string | null | undefined): string {
  if (!value) return '—';
  return dateTime.format(new Date(value));
}

export function formatDate(value: Date | string | null | undefined): string {
  if (!value) return '—';
  return dateOnly.format(new Date(value));
}

/** "3 min ago", "in 2 days": for times near now. */
export function formatRelative(value: Date | string | null | undefined, now = Date.now()): string {
  if (!value) return 'never';
  const seconds = Math.round((new Date(value).getTime() - now) / 1000);
  const abs = Math.abs(seconds);
  const [amount, unit] =
    abs < 60 ? [seconds, 'second'] :
    abs < 3600 ? [Math.round(seconds / 60), 'minute'] :
    abs < 86400 ? [Math.round(seconds / 3600), 'hour'] :
    [Math.round(seconds / 86400), 'day'];
  if (unit === 'second' && abs < 10) return 'just now';
  return new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' }).format(amount, unit as Intl.RelativeTimeFormatUnit);
}

export { formatBytes } from '../../sdk/bytes';

export function formatDuration(seconds: number): string {
  if (seconds < 60) return `${seconds} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min`;
  return `${Math.floor(seconds / 3600)} h ${Math.floor((seconds % 3600) / 60)} min`;
}

/** Expiry choices for keys and tokens (0: never). */
export const EXPIRY_DAYS = [
  { days: 0, label: 'Never' },
  { days: 7, label: '7 days' },
  { days: 30, label: '30 days' },
  { days: 90, label: '90 days' },
  { days: 365, label: '1 year' },
];
