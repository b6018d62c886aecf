/**
 * Honest outcomes: a run whose episodes mostly fail, or an evaluation whose games all failed, ends
 * FAILED naming its most frequent errors, instead of SUCCEEDED with a reward of 0; and a GRPO run
 * with nothing to learn from (every group's rewards equal, step after step) is told so early.
 */
import { type EpisodeRollout } from '../runtime/rollout';

/** The most frequent errors of some episodes (their messages name the user's file:line:column), most frequent first. */
export function frequentErrors(rollouts: readonly EpisodeRollout[], limit = 3): string {
  const counts = new Map<string, number>();
  for (const r of rollouts) {
    if (!r.error) continue;
    counts.set(r.error.message, (counts.get(r.error.message) ?? 0) + 1);
  }
  return [...counts.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, limit)
    .map(([message, n]) => `"${message}" (×${n})`)
    .join('; ');
}

/** True when every group of learning episodes had one reward for all its members: no GRPO signal. */
function allGroupsFlat(rollouts: readonly EpisodeRollout[]): boolean {
  const groups = new Map<string, Set<number>>();
  for (const r of rollouts) {
    if (r.endReason === 'error') continue;
    for (const agent of Object.values(r.agents)) {
      if (!agent.learn) continue;
      const group = String(agent.sequences[0]?.group ?? r.episodeId);
      const rewards = groups.get(group) ?? new Set<number>();
      rewards.add(agent.totalReward);
      groups.set(group, rewards);
    }
  }
  return groups.size > 0 && [...groups.values()].every((rewards) => rewards.size === 1);
}

export interface OutcomeVerdict {
  /** The job must end FAILED with this reason. */
  fail?: string;
  /** A warning for the job's log. */
  warn?: string;
}

/** Watches a training run's steps (train.ts calls `observe` after each). */
export class OutcomeWatch {
  private episodes = 0;
  private failed: EpisodeRollout[] = [];
  private flatSteps = 0;
  private warned = false;

  constructor(private readonly o: { maxEpisodeErrorShare: number; flatRewardWarnSteps: number; algorithm: string }) {}

  observe(step: number, rollouts: readonly EpisodeRollout[]): OutcomeVerdict {
    this.episodes += rollouts.length;
    this.failed.push(...rollouts.filter((r) => r.endReason === 'error'));
    // Only the errors are kept (for the verdict's words), not whole runs of episodes.
    if (this.failed.length > 1000) this.failed = this.failed.slice(-1000);
    const errors = this.failed.length;
    if (errors > 0 && errors > this.o.maxEpisodeErrorShare * this.episodes) {
      const share = Math.round((100 * errors) / this.episodes);
      return {
        fail: `${share}% of episodes failed by step ${step} (more than maxEpisodeErrorShare ${this.o.maxEpisodeErrorShare}); most frequent: ${frequentErrors(this.failed)}`,
      };
    }
    if (this.o.algorithm !== 'grpo' || this.warned || this.o.flatRewardWarnSteps === 0) return {};
    if (!allGroupsFlat(rollouts)) {
      this.warned = true; // the signal exists; the warning is for runs that start without one
      return {};
    }
    this.flatSteps++;
    if (this.flatSteps < this.o.flatRewardWarnSteps) return {};
    this.warned = true;
    return {
      warn:
        `in each of the first ${this.flatSteps} steps every group's episodes got the same reward, so GRPO had nothing to learn from ` +
        '(its advantages are rewards relative to the group). Try a warm start (SFT on demonstrations, then --from its checkpoint), ' +
        'a denser reward (partial credit), or more samples per group (groupSize).',
    };
  }
}
