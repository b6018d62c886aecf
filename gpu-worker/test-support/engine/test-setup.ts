/** Shared by the engine's tests: one backend per test file (wasm unless WHETSTONE_BACKEND says otherwise). */
import { initBackend, type BackendReport } from '../../engine/backend';

export async function testBackend(): Promise<BackendReport> {
  return initBackend(process.env.WHETSTONE_BACKEND ?? 'wasm');
}
