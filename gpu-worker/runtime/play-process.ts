/**
 * A play process: the server's play sessions (server/play/play-sessions.ts) start one per team by
 * path and send it the team's sessions' commands. User code runs here, never on the server's event
 * loop; each session has its own sandbox (play-session.ts), and every call into it has training's
 * deadline and memory limit. The server stops this process when a command takes far too long, or
 * when the team has had no session for a while.
 */
import type { PlayProcessAnswer, PlayProcessCommand, PlayProcessMessage } from '../../sdk/play';
import { autoplay, PlaySessionRuntime } from './play-session';

const sessions = new Map<string, PlaySessionRuntime>();

function send(message: PlayProcessMessage): void {
  process.send?.(message);
}

async function answer(command: PlayProcessCommand): Promise<PlayProcessAnswer> {
  switch (command.type) {
    case 'open': {
      const { session, result } = await PlaySessionRuntime.open(command.sessionId, command.request);
      if (session) sessions.set(command.sessionId, session);
      return { type: 'opened', result };
    }
    case 'step': {
      const session = sessions.get(command.sessionId);
      // The server sends steps only for sessions it knows open; a missing one ended here first.
      if (!session) {
        const error = { kind: 'crash' as const, during: 'step', message: 'this play session is not open in its process', location: null, userStack: '' };
        return { type: 'stepped', result: { turn: null, botTurns: [], observation: null, turnCount: 0, done: true, endReason: 'error', returns: {}, error, logs: [] } };
      }
      const result = await session.step(command.action);
      if (session.ended) sessions.delete(command.sessionId);
      return { type: 'stepped', result };
    }
    case 'close': {
      const session = sessions.get(command.sessionId);
      sessions.delete(command.sessionId);
      await session?.close();
      return { type: 'closed' };
    }
    case 'autoplay':
      return { type: 'autoplayed', result: await autoplay(command.request) };
  }
}

process.on('message', (command: PlayProcessCommand) => {
  void answer(command)
    .then((reply) => send({ type: 'answer', id: command.id, answer: reply }))
    .catch((error: unknown) => {
      // Not the user's code failing (that is in the answers): the runtime itself. The server ends this process's sessions.
      console.error('[play]', error);
      process.exit(1);
    });
});
// Ends with the server, however the server ends.
process.on('disconnect', () => process.exit(0));
send({ type: 'ready' });
