/**
 * Draws the app's icons (public/icons/): the mark of public/favicon.svg — a dark rounded square,
 * an amber whetstone and its base — as icon.svg and as PNGs of 192 and 512 pixels, plus a
 * maskable 512 (full-bleed background, the mark inside the safe zone). No image library: the
 * shapes are simple enough to rasterise here, 4×4 samples a pixel.
 *
 *   npx tsx scripts/generate-icons.ts
 */
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';

type Rgb = [number, number, number];
const BACKGROUND: Rgb = [0x1f, 0x29, 0x37];
const STONE: Rgb = [0xf5, 0x9e, 0x0b];
const BASE: Rgb = [0xe5, 0xe7, 0xeb];

/** The mark in a 32-unit square (favicon.svg's coordinates), scaled by `inset` about the centre. */
function shapeAt(x: number, y: number, opts: { rounded: boolean; inset: number }): Rgb | null {
  const u = 16 + (x - 16) / opts.inset;
  const v = 16 + (y - 16) / opts.inset;
  if (opts.rounded && !insideRoundedSquare(x, y, 32, 6)) return null;
  if (u >= 6 && u <= 26 && v >= 22 && v <= 25) return BASE;
  // The triangle (6,22) (16,8) (26,22): below both slanted edges and above its base.
  if (v <= 22 && v >= 8 + (Math.abs(u - 16) * 14) / 10) return STONE;
  return BACKGROUND;
}

function insideRoundedSquare(x: number, y: number, size: number, r: number): boolean {
  const cx = Math.min(Math.max(x, r), size - r);
  const cy = Math.min(Math.max(y, r), size - r);
  return (x - cx) ** 2 + (y - cy) ** 2 <= r * r;
}

function render(size: number, opts: { rounded: boolean; inset: number }): Buffer {
  const samples = 4;
  const rows: Buffer[] = [];
  for (let py = 0; py < size; py++) {
    const row = Buffer.alloc(1 + size * 4); // filter byte 0, then RGBA
    for (let px = 0; px < size; px++) {
      let r = 0, g = 0, b = 0, a = 0;
      for (let sy = 0; sy < samples; sy++) {
        for (let sx = 0; sx < samples; sx++) {
          const colour = shapeAt(((px + (sx + 0.5) / samples) * 32) / size, ((py + (sy + 0.5) / samples) * 32) / size, opts);
          if (!colour) continue;
          r += colour[0];
          g += colour[1];
          b += colour[2];
          a += 1;
        }
      }
      const o = 1 + px * 4;
      if (a > 0) [row[o], row[o + 1], row[o + 2]] = [Math.round(r / a), Math.round(g / a), Math.round(b / a)];
      row[o + 3] = Math.round((a / (samples * samples)) * 255);
    }
    rows.push(row);
  }
  return png(size, Buffer.concat(rows));
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(data: Buffer): number {
  let c = 0xffffffff;
  for (const byte of data) c = CRC_TABLE[(c ^ byte) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

function png(size: number, scanlines: Buffer): Buffer {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(size, 0);
  header.writeUInt32BE(size, 4);
  header.set([8, 6, 0, 0, 0], 8); // 8 bits, RGBA, deflate, no filter method, no interlace
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', zlib.deflateSync(scanlines, { level: 9 })),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

const out = path.join(path.dirname(new URL(import.meta.url).pathname), '..', 'public', 'icons');
fs.mkdirSync(out, { recursive: true });
fs.copyFileSync(path.join(out, '..', 'favicon.svg'), path.join(out, 'icon.svg'));
fs.writeFileSync(path.join(out, 'icon-192.png'), render(192, { rounded: true, inset: 1 }));
fs.writeFileSync(path.join(out, 'icon-512.png'), render(512, { rounded: true, inset: 1 }));
// Maskable: launchers crop to any shape within the central 80%, so the mark sits inside it.
fs.writeFileSync(path.join(out, 'icon-maskable-512.png'), render(512, { rounded: false, inset: 0.7 }));
console.log(`icons written to ${out}`);
