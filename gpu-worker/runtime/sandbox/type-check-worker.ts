/**
 * The type checker's thread (started by type-check-thread.ts): TypeScript runs here, beside the
 * dry run on the process's main thread rather than after it, and a check that runs away is ended
 * with the thread, not the process.
 */
import { parentPort } from 'node:worker_threads';
import type { EnvironmentSource } from '../../../sdk/environment-source';
import { typeCheckEnvironment, warmTypeChecker } from './type-check';

parentPort!.on('message', (message: { id: number; source: EnvironmentSource }) => {
  void typeCheckEnvironment(message.source).then(
    (result) => parentPort!.postMessage({ id: message.id, result }),
    (error: unknown) => parentPort!.postMessage({ id: message.id, result: null, error: String(error) }),
  );
});
// Loading TypeScript and parsing the lib cost seconds: paid now, while no check waits.
void warmTypeChecker().then(() => parentPort!.postMessage({ warm: true }));
