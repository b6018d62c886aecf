/**
 * Chart colours by theme: recharts draws SVG attributes, which take no CSS variables, so these
 * mirror globals.css's palette (--accent, --border, --muted, --panel, --bad, --text).
 */
const COLOURS = {
  light: { line: '#b45309', band: '#f59e0b', grid: '#e2e8f0', text: '#5b6b80', tooltip: '#ffffff', border: '#cbd5e1', marker: '#b91c1c', background: '#ffffff', ink: '#0f172a' },
  dark: { line: '#f0a73a', band: '#f0a73a', grid: '#2a313b', text: '#8e9aa8', tooltip: '#161b22', border: '#3d4651', marker: '#ff7b72', background: '#161b22', ink: '#e6edf3' },
};

export function chartColours(theme: 'light' | 'dark') {
  return COLOURS[theme];
}


type ChartColours = (typeof COLOURS)['light'];

/**
 * The tooltip's box and text. Its rows are written in the text colour, not recharts' default of
 * each series' colour: a light band (amber on white) would be unreadable, and the swatch beside
 * the name already says which series it is.
 */
export function tooltipStyles(colours: ChartColours) {
  return {
    contentStyle: { background: colours.tooltip, border: `1px solid ${colours.border}`, borderRadius: 6, fontSize: 12, color: colours.ink },
    itemStyle: { color: colours.ink },
    labelStyle: { color: colours.ink },
  };
}
