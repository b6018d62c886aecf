// What a worker is told when a call of its is refused, whichever way it came: over HTTP the
// status is the response's (workers/api.ts), over socket.io it is the ack's (workers/socket.ts).
// Stream ingest (streams/ingest.ts) and attempt calls (attempts.ts) refuse the same way, with the
// same words, and read fencing tokens the same way.

/** A refused call: `status` is the HTTP status the worker gets (400, 401, 404, 409, 413…). */
export class Refusal extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
  }
}

/** 404: the attempt does not exist, or another worker holds it. */
export const notYourAttempt = () => new Refusal(404, 'No such attempt on this worker');

/** 409: the attempt lost its lease or was superseded (its fencing token is stale). */
export const attemptFenced = () => new Refusal(409, 'This attempt no longer holds the job (lease lost or superseded): stop it and write nothing more');

const MAX_BIGINT = 2n ** 63n - 1n;

/**
 * A fencing token as the column's bigint text (as handed out: decimal, no sign, no leading
 * zeros), or null when it cannot be one, so that it matches no attempt and the caller gets 409,
 * never a database error.
 */
export function fencingTokenOf(token: string): string | null {
  return /^(0|[1-9]\d{0,18})$/.test(token) && BigInt(token) <= MAX_BIGINT ? token : null;
}
