/**
 * Limits the server enforces and clients check first, so that a user hears the limit and the file
 * before anything is sent.
 */

/** The largest tRPC request body the server parses (413 past it): a dataset upload or an environment with its files. */
export const MAX_REQUEST_BYTES = 16_000_000;

/** Longest text kept of one observation, action or transcript segment in rollouts, matches and boards. */
export const MAX_STORED_TEXT = 20_000;

/** `text`, cut to `max` characters with a marker that says how much was cut. */
export function capText(text: string, max = MAX_STORED_TEXT): string {
  return text.length <= max ? text : `${text.slice(0, max)}… [${text.length - max} more characters not stored]`;
}
