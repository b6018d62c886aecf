import type { TrainingConfig } from '../../sdk/training-config';
import { previewPlacement, type PlacementPreview } from '../scheduler/preview';
import { admissionRefusal, checkSubmission, QUOTA_DEFAULTS } from './check-submission';
import type { TeamMemberContext } from './context';
import type { SubmitInput } from './submit.schema';

/** The launcher's answer before submitting (jobs.preview). */
export type SubmitPreview =
  | {
      ok: true;
      /** The config the job would store; for TRAIN and SFT its `training` is the full resolved training config. */
      resolved: Record<string, unknown> & { training?: TrainingConfig };
      /** TRAIN and SFT: estimated memory of the run against the largest device of the team's pools; null for other kinds. */
      estimate: { bytes: number; fits: boolean; largestDeviceBytes: number | null } | null;
      placement: PlacementPreview;
    }
  | {
      ok: false;
      /** The offending input's path: a config path ("training.learningRate", "datasetVersionId") or "priority" / "deviceCount". */
      field?: string;
      /** What jobs.submit would answer, word for word. */
      message: string;
    };

/**
 * What jobs.submit would answer for this input, without creating anything: the same checks
 * (check-submission.ts) and admission, then the planner's decision for it against the cluster as
 * it is now.
 */
export async function previewJob({ ctx, input }: { ctx: TeamMemberContext; input: SubmitInput }): Promise<SubmitPreview> {
  const teamId = ctx.membership.teamId;
  const checked = await checkSubmission({ db: ctx.db, teamId }, input);
  if (!checked.ok) return refused(checked);
  const quota = (await ctx.db.teamQuota.findUnique({ where: { teamId } })) ?? QUOTA_DEFAULTS;
  const queuedJobs = await ctx.db.job.count({ where: { teamId, state: 'QUEUED' } });
  const refusal = admissionRefusal(input, quota, queuedJobs, ctx.membership.role);
  if (refusal) return refused(refusal);
  const placement = await previewPlacement(ctx.db, {
    teamId,
    ownerId: ctx.user.id,
    priority: input.priority,
    deviceCount: input.deviceCount,
    deviceKind: input.deviceKind ?? null,
    memoryBytes: input.memoryBytes,
    timeLimitSeconds: input.timeLimitSeconds ?? quota.defaultTimeLimitSeconds,
  });
  return { ok: true, resolved: checked.config as Record<string, unknown> & { training?: TrainingConfig }, estimate: checked.estimate, placement };
}

function refused(r: { field?: string; message: string }): SubmitPreview {
  return { ok: false, ...(r.field === undefined ? {} : { field: r.field }), message: r.message };
}
