/**
 * The type checker's thread (started by type-check-thread.ts): TypeScript runs here, beside the
 * dry run on the process's main thread rather than after it, and a check that runs away is ended
 * with the thread, not the process. Checks run one after another, the first after the warm-up.
 */
import { parentPort } from 'node:worker_threads';
import type { EnvironmentSource } from '../../../sdk/environment-source';
import { typeCheckEnvironment, warmTypeChecker } from './type-check';

// Loading TypeScript and parsing the lib cost seconds: paid now, while no check waits.
let queue: Promise<unknown> = warmTypeChecker();

parentPort!.on('message', (message: { id: number; source: EnvironmentSource }) => {
  queue = queue
    .catch(() => {})
    .then(async () => {
      // The check's own time starts here, not while the warm-up or an earlier check ran.
      parentPort!.postMessage({ started: message.id });
      try {
        parentPort!.postMessage({ id: message.id, result: await typeCheckEnvironment(message.source) });
      } catch (error) {
        parentPort!.postMessage({ id: message.id, result: null, error: String(error) });
      }
    });
});
