/**
 * Limits the server enforces and clients check first, so that a user hears the limit and the file
 * before anything is sent.
 */

/** The largest tRPC request body the server parses (413 past it): a dataset upload or an environment with its files. */
export const MAX_REQUEST_BYTES = 16_000_000;
