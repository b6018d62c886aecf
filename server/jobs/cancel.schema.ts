import { z } from 'zod';

/** What a cancel takes (the team comes from the procedure). */
export const cancelInput = z.object({ jobId: z.string().min(1).max(64) });
export type CancelInput = z.output<typeof cancelInput>;
