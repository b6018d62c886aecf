// Builds the engine's native kernels (gpu-worker/engine/native) with the node-gyp that npm ships.
// Run by `npm ci` (scripts/postinstall.mjs) and by hand. Never fails the install: without a C++
// compiler or Node's headers the engine runs its wasm kernels, and the worker says why.
//
// Offline: node-gyp would download Node's headers; Node's own installation carries them
// (<prefix>/include/node), so they are used when present.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const dir = path.join(root, 'gpu-worker/engine/native');

if (process.env.WHETSTONE_NATIVE === '0') {
  console.log('native kernels: not built (WHETSTONE_NATIVE=0)');
  process.exit(0);
}

// npm sets npm_config_node_gyp for lifecycle scripts; by hand, find the copy inside npm.
const npmGyp = path.join(path.dirname(process.execPath), '../lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js');
const gyp = process.env.npm_config_node_gyp || npmGyp;
if (!existsSync(gyp)) {
  console.warn(`native kernels: not built (node-gyp not found at ${gyp}); the engine will use its wasm kernels`);
  process.exit(0);
}
const args = [gyp, 'rebuild', '--directory', dir];
const prefix = path.dirname(path.dirname(process.execPath));
if (!process.env.npm_config_nodedir && existsSync(path.join(prefix, 'include/node/node_api.h'))) args.push(`--nodedir=${prefix}`);

const result = spawnSync(process.execPath, args, { cwd: dir, encoding: 'utf8' });
if (result.status === 0) {
  console.log('native kernels: built');
} else {
  const why = `${result.stderr ?? ''}${result.stdout ?? ''}`.split('\n').filter((l) => /error/i.test(l)).slice(0, 5).join('\n');
  console.warn(`native kernels: not built; the engine will use its wasm kernels.\n${why || result.error?.message || ''}`);
}
