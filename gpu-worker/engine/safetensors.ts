/**
 * The safetensors layout, read and written with plain file I/O: an 8-byte little-endian header
 * length, a JSON header mapping names to {dtype, shape, data_offsets} (plus "__metadata__", a map
 * of strings), then the raw little-endian tensor bytes. We add a CRC-32 of the data section to the
 * metadata so that flipped bytes are reported, not loaded.
 */
import fs from 'node:fs';
import path from 'node:path';
import { CheckpointError } from './errors';

export interface NamedTensor {
  shape: number[];
  data: Float32Array;
}

const CRC_KEY = 'whetstone.crc32';

export function encodeSafetensors(tensors: Map<string, NamedTensor>, metadata: Record<string, string>): Buffer {
  const header: Record<string, unknown> = {};
  let offset = 0;
  const names = [...tensors.keys()].sort();
  for (const name of names) {
    const t = tensors.get(name)!;
    const bytes = t.data.length * 4;
    if (t.shape.reduce((a, b) => a * b, 1) !== t.data.length) throw new Error(`tensor "${name}": shape [${t.shape}] does not match ${t.data.length} values`);
    header[name] = { dtype: 'F32', shape: t.shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  const data = Buffer.alloc(offset);
  for (const name of names) {
    const t = tensors.get(name)!;
    const [start] = (header[name] as { data_offsets: number[] }).data_offsets;
    // Copy through a DataView so the bytes are little-endian whatever the host.
    const view = new DataView(data.buffer, data.byteOffset + start, t.data.length * 4);
    for (let i = 0; i < t.data.length; i++) view.setFloat32(i * 4, t.data[i], true);
  }
  header.__metadata__ = { ...metadata, [CRC_KEY]: String(crc32(data)) };
  let json = JSON.stringify(header);
  // Pad the header with spaces to an 8-byte boundary, as the reference implementation does.
  json += ' '.repeat((8 - (Buffer.byteLength(json) % 8)) % 8);
  const head = Buffer.from(json, 'utf8');
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(head.length));
  return Buffer.concat([len, head, data]);
}

/** One tensor as a safetensors header lists it: its stored dtype and shape, and its bytes in the data section. */
export interface SafetensorsEntry {
  dtype: string;
  shape: number[];
  start: number;
  end: number;
}

/**
 * The header (the JSON after the 8-byte length) of a file whose data section has `dataLength`
 * bytes, checked entry by entry: a supported dtype, a valid shape, offsets inside the data whose
 * span is the shape's size. What `decodeSafetensors` reads, and all that an import checks before
 * reading any weight.
 */
function parseHeader(header: unknown, dataLength: number, where: string): { entries: Map<string, SafetensorsEntry>; metadata: Record<string, string> } {
  const fail = (msg: string): never => {
    throw new CheckpointError(where, msg);
  };
  if (typeof header !== 'object' || header === null || Array.isArray(header)) fail('corrupt header: not a JSON object');
  const h = header as Record<string, unknown>;
  const metadata = (h.__metadata__ ?? {}) as Record<string, string>;
  const entries = new Map<string, SafetensorsEntry>();
  for (const [name, entry] of Object.entries(h)) {
    if (name === '__metadata__') continue;
    const e = entry as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
    const width = typeof e.dtype === 'string' ? DTYPE_BYTES[e.dtype] : undefined;
    if (width === undefined) fail(`tensor "${name}" has dtype ${String(e.dtype)}; only F32, F16 and BF16 are supported`);
    if (!Array.isArray(e.shape) || !e.shape.every((d) => Number.isInteger(d) && d >= 0)) fail(`tensor "${name}" has an invalid shape`);
    const offs = e.data_offsets;
    if (!Array.isArray(offs) || offs.length !== 2 || !offs.every((o) => Number.isInteger(o) && o >= 0) || offs[1] < offs[0]) {
      fail(`tensor "${name}" has invalid data_offsets`);
    }
    const [start, end] = offs as number[];
    if (end > dataLength) fail(`truncated: tensor "${name}" needs bytes [${start}, ${end}) but the data section has ${dataLength}`);
    const shape = e.shape as number[];
    const count = shape.reduce((a, b) => a * b, 1);
    if (count * width! !== end - start) fail(`tensor "${name}": shape [${shape}] needs ${count * width!} bytes, offsets give ${end - start}`);
    entries.set(name, { dtype: e.dtype as string, shape, start, end });
  }
  return { entries, metadata };
}

function headerJson(bytes: Buffer, where: string): unknown {
  try {
    return JSON.parse(bytes.toString('utf8')) as unknown;
  } catch (err) {
    throw new CheckpointError(where, `corrupt header: not valid JSON (${(err as Error).message})`);
  }
}

export function decodeSafetensors(
  buf: Buffer,
  where = '<buffer>',
): { tensors: Map<string, NamedTensor>; metadata: Record<string, string> } {
  if (buf.length < 8) throw new CheckpointError(where, `truncated: ${buf.length} bytes, not even the 8-byte header length`);
  const headerLen = Number(buf.readBigUInt64LE(0));
  if (headerLen > buf.length - 8) throw new CheckpointError(where, `truncated or corrupt: header claims ${headerLen} bytes but the file has ${buf.length - 8} after the length`);
  const data = buf.subarray(8 + headerLen);
  const { entries, metadata } = parseHeader(headerJson(buf.subarray(8, 8 + headerLen), where), data.length, where);
  const tensors = new Map<string, NamedTensor>();
  for (const [name, e] of entries) {
    const count = e.shape.reduce((a, b) => a * b, 1);
    const view = new DataView(data.buffer, data.byteOffset + e.start, e.end - e.start);
    tensors.set(name, { shape: e.shape, data: toFloat32(view, e.dtype, count) });
  }
  const expected = metadata[CRC_KEY];
  if (expected !== undefined && String(crc32(data)) !== expected) throw new CheckpointError(where, 'corrupt: the data section does not match its CRC-32 checksum');
  return { tensors, metadata };
}

/** A file's header alone (no tensor data is read): what an import checks a multi-gigabyte file by. */
export async function readSafetensorsHeader(file: string): Promise<{ entries: Map<string, SafetensorsEntry>; metadata: Record<string, string> }> {
  let handle: fs.promises.FileHandle;
  try {
    handle = await fs.promises.open(file, 'r');
  } catch (err) {
    throw new CheckpointError(file, `cannot be read: ${(err as Error).message}`);
  }
  try {
    const size = (await handle.stat()).size;
    if (size < 8) throw new CheckpointError(file, `truncated: ${size} bytes, not even the 8-byte header length`);
    const len = Buffer.alloc(8);
    await handle.read(len, 0, 8, 0);
    const headerLen = Number(len.readBigUInt64LE(0));
    // (A header is JSON of names and shapes: 100 MB would be millions of tensors.)
    if (headerLen > size - 8 || headerLen > 100 * 2 ** 20) throw new CheckpointError(file, `truncated or corrupt: header claims ${headerLen} bytes but the file has ${size - 8} after the length`);
    const head = Buffer.alloc(headerLen);
    await handle.read(head, 0, headerLen, 8);
    return parseHeader(headerJson(head, file), size - 8 - headerLen, file);
  } finally {
    await handle.close();
  }
}

/** Write atomically: a temporary file in the same folder, then rename. */
export async function writeSafetensors(file: string, tensors: Map<string, NamedTensor>, metadata: Record<string, string>): Promise<number> {
  const buf = encodeSafetensors(tensors, metadata);
  await fs.promises.mkdir(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  await fs.promises.writeFile(tmp, buf);
  await fs.promises.rename(tmp, file);
  return buf.length;
}

export async function readSafetensors(file: string): Promise<{ tensors: Map<string, NamedTensor>; metadata: Record<string, string> }> {
  let buf: Buffer;
  try {
    buf = await fs.promises.readFile(file);
  } catch (err) {
    throw new CheckpointError(file, `cannot be read: ${(err as Error).message}`);
  }
  return decodeSafetensors(buf, file);
}

/** Bytes per value of the dtypes we read; the engine computes in f32, so every one is widened. */
const DTYPE_BYTES: Record<string, number> = { F32: 4, F16: 2, BF16: 2 };

/** Little-endian values of `dtype` → f32. BF16 is the top half of an f32, so widening is exact; so is F16's. */
function toFloat32(view: DataView, dtype: string, count: number): Float32Array {
  const out = new Float32Array(count);
  if (dtype === 'F32') {
    for (let i = 0; i < count; i++) out[i] = view.getFloat32(i * 4, true);
  } else if (dtype === 'BF16') {
    const bits = new Uint32Array(out.buffer);
    for (let i = 0; i < count; i++) bits[i] = view.getUint16(i * 2, true) << 16;
  } else {
    for (let i = 0; i < count; i++) out[i] = halfToFloat(view.getUint16(i * 2, true));
  }
  return out;
}

/** IEEE 754 binary16 → number (subnormals, infinities and NaN included). */
function halfToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 0x1f) return frac ? NaN : sign * Infinity;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

function crc32(buf: Uint8Array): number {
  let c = 0xffffffff;
  for (let i = 0; i < buf.length; i++) c = CRC_TABLE[(c ^ buf[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
