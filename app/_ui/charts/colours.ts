/**
 * Chart colours by theme: recharts draws SVG attributes, which take no CSS variables, so these
 * mirror globals.css's palette (--accent, --border, --muted, --panel, --bad).
 */
const COLOURS = {
  light: { line: '#b45309', band: '#f59e0b', grid: '#e2e8f0', text: '#5b6b80', tooltip: '#ffffff', border: '#cbd5e1', marker: '#b91c1c', background: '#ffffff' },
  dark: { line: '#f0a73a', band: '#f0a73a', grid: '#2a313b', text: '#8e9aa8', tooltip: '#161b22', border: '#3d4651', marker: '#ff7b72', background: '#161b22' },
};

export function chartColours(theme: 'light' | 'dark') {
  return COLOURS[theme];
}

