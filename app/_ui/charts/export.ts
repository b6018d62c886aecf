/** A panel's numbers and picture as files the reader keeps (UI.md: every chart has a CSV). */
import { saveFile as save } from '../save-file';

/** A file name from a metric key: its odd characters become underscores. */
function fileName(key: string, ext: string): string {
  return `${key.replace(/[^A-Za-z0-9._-]+/g, '_')}.${ext}`;
}

export function csvOf(rows: ReadonlyArray<{ fromStep: number; step: number; last: number; smooth: number; band: [number, number] }>): string {
  const lines = ['from_step,to_step,last,smoothed,min,max', ...rows.map((r) => [r.fromStep, r.step, r.last, r.smooth, r.band[0], r.band[1]].join(','))];
  return `${lines.join('\n')}\n`;
}

export function downloadCsv(key: string, rows: Parameters<typeof csvOf>[0]) {
  save(fileName(key, 'csv'), new Blob([csvOf(rows)], { type: 'text/csv' }));
}

/** The panel's SVG drawn onto a canvas at twice its size. */
export async function downloadPng(key: string, figure: HTMLElement, background: string) {
  const svg = figure.querySelector('svg.recharts-surface');
  if (!svg) return;
  const { width, height } = svg.getBoundingClientRect();
  const clone = svg.cloneNode(true) as SVGSVGElement;
  clone.setAttribute('xmlns', 'http://www.w3.org/2000/svg');
  const url = URL.createObjectURL(new Blob([new XMLSerializer().serializeToString(clone)], { type: 'image/svg+xml' }));
  try {
    const image = new Image();
    await new Promise((resolve, reject) => {
      image.onload = resolve;
      image.onerror = reject;
      image.src = url;
    });
    const canvas = document.createElement('canvas');
    canvas.width = width * 2;
    canvas.height = height * 2;
    const ctx = canvas.getContext('2d')!;
    ctx.fillStyle = background;
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    ctx.scale(2, 2);
    ctx.drawImage(image, 0, 0, width, height);
    const png = await new Promise<Blob | null>((resolve) => canvas.toBlob(resolve, 'image/png'));
    if (png) save(fileName(key, 'png'), png);
  } finally {
    URL.revokeObjectURL(url);
  }
}
