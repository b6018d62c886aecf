import fs from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../paths';

/** The committed tiny Qwen2 chat model (gpu-worker/engine/pretrained/fixtures/make_fixtures.py). */
export const CHAT_MODEL = path.join(repoRoot, 'gpu-worker/engine/pretrained/fixtures/qwen2-chat');

/** A copy of the chat model's folder in `dir` as a user's would be: without the tests' expectations. */
export function copyChatModel(dir: string): string {
  fs.cpSync(CHAT_MODEL, dir, { recursive: true });
  fs.rmSync(path.join(dir, 'expected.json'));
  return dir;
}
