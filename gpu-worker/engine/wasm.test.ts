import fs from 'node:fs';
import path from 'node:path';
import { expect, test } from 'vitest';
import { assembleWat, WASM_DIR, watModules } from './tools/build-wasm';

test.each(watModules())('the committed %s module is the assembled .wat (run npx tsx gpu-worker/engine/tools/build-wasm.ts)', async (name) => {
  const committed = fs.readFileSync(path.join(WASM_DIR, `${name}.wasm.ts`), 'utf8');
  expect(committed).toBe(await assembleWat(name));
});
