/**
 * A refusal that lists what is wrong line by line (a dataset's bad lines). Thrown as a TRPCError's
 * cause, it reaches the client structured in `error.data.lineProblems` (trpc.ts's error
 * formatter), so a page can show each line's reason; the message says the same in words.
 */
export class LineProblems extends Error {
  constructor(
    message: string,
    /** The first problems, in file order (1-based lines). */
    readonly problems: Array<{ line: number; message: string }>,
    /** How many problems there are in all (more than `problems` holds when there are many). */
    readonly total: number,
  ) {
    super(message);
    this.name = 'LineProblems';
  }
}
