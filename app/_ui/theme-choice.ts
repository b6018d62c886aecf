// Shared by the root layout (a server component, which renders <html data-theme>) and the
// client's theme toggle (theme.tsx).
export type ThemeChoice = 'system' | 'light' | 'dark';
export const THEME_COOKIE = 'whetstone-theme';

export function parseThemeChoice(value: string | undefined): ThemeChoice {
  return value === 'light' || value === 'dark' ? value : 'system';
}
