/**
 * Entry point of the engine child process (forked by EngineProcess). Requests are handled one at a
 * time, in order, so training and sampling never interleave.
 */
import { type RequestMessage, type ResponseMessage } from './protocol';
import { EngineSession, errorInfo } from './session';

const session = new EngineSession();
let queue: Promise<void> = Promise.resolve();

function reply(msg: ResponseMessage): void {
  process.send?.(msg);
}

process.on('message', (msg: RequestMessage) => {
  queue = queue.then(async () => {
    try {
      const result = await session.handle(msg.method, msg.params);
      reply({ id: msg.id, ok: true, result });
      if (msg.method === 'shutdown') process.disconnect?.();
    } catch (err) {
      reply({ id: msg.id, ok: false, error: errorInfo(err) });
    }
  });
});

// Exit with the parent: an orphaned trainer would hold memory and a device.
process.on('disconnect', () => process.exit(0));
