import fs from 'node:fs';
import path from 'node:path';
import { expect, test } from 'vitest';
import { assembleDecodeAttention, WASM_DIR } from './tools/build-wasm';

test('the committed decode-attention module is the assembled .wat (run npx tsx gpu-worker/engine/tools/build-wasm.ts)', async () => {
  const committed = fs.readFileSync(path.join(WASM_DIR, 'decode-attention.wasm.ts'), 'utf8');
  expect(committed).toBe(await assembleDecodeAttention());
});
