'use client';
import { Monitor, Moon, Sun } from 'lucide-react';
import { useCallback, useEffect, useState, useSyncExternalStore } from 'react';

import { parseThemeChoice, THEME_COOKIE, type ThemeChoice } from './theme-choice';

// Light and dark follow the system unless the user picks one. The choice lives in a cookie so
// the server renders <html data-theme> with it (app/layout.tsx): no flash of the wrong theme.

function readChoice(): ThemeChoice {
  return parseThemeChoice(document.documentElement.dataset.theme);
}

// One query for the page: every chart asks for the theme on each render (a live run's page renders
// a frame at a time), and a new MediaQueryList each time showed in its profile.
let dark: MediaQueryList | null = null;
const darkQuery = () => (dark ??= window.matchMedia('(prefers-color-scheme: dark)'));
const listeners = new Set<() => void>();
function subscribe(listener: () => void) {
  listeners.add(listener);
  const query = darkQuery();
  query.addEventListener('change', listener);
  return () => {
    listeners.delete(listener);
    query.removeEventListener('change', listener);
  };
}

function setChoice(choice: ThemeChoice) {
  if (choice === 'system') delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = choice;
  document.cookie = `${THEME_COOKIE}=${choice}; path=/; max-age=31536000; samesite=lax`;
  listeners.forEach((l) => l());
}

/** The theme in effect ('light' or 'dark'), for what CSS cannot colour (Monaco, charts). */
export function useEffectiveTheme(): 'light' | 'dark' {
  return useSyncExternalStore(
    subscribe,
    () => {
      const choice = readChoice();
      if (choice !== 'system') return choice;
      return darkQuery().matches ? 'dark' : 'light';
    },
    () => 'light',
  );
}

const NEXT: Record<ThemeChoice, ThemeChoice> = { system: 'light', light: 'dark', dark: 'system' };
const LABEL: Record<ThemeChoice, string> = { system: 'Theme: system', light: 'Theme: light', dark: 'Theme: dark' };

export function useThemeChoice(): [ThemeChoice, (choice: ThemeChoice) => void] {
  const [choice, setState] = useState<ThemeChoice>('system');
  useEffect(() => {
    setState(readChoice());
    return subscribe(() => setState(readChoice()));
  }, []);
  const set = useCallback((c: ThemeChoice) => setChoice(c), []);
  return [choice, set];
}

/** Cycles system → light → dark. */
export function ThemeToggle() {
  const [choice, set] = useThemeChoice();
  const Icon = choice === 'dark' ? Moon : choice === 'light' ? Sun : Monitor;
  return (
    <button
      type="button"
      className="icon-button"
      onClick={() => set(NEXT[choice])}
      aria-label={`${LABEL[choice]} (switch to ${NEXT[choice]})`}
      title={`${LABEL[choice]} — click for ${NEXT[choice]}`}
    >
      <Icon size={17} aria-hidden="true" />
    </button>
  );
}
