
/**
 * Suspect samples, flagged in the rollout viewer: pure rules over what runs.rollouts returns.
 * A group is the episodes of one task sampled together (GRPO's group, `info.group`).
 */
export interface SampleLike {
  step: number;
  index: number;
  reward: number;
  endReason: string | null;
  segments: unknown;
  info: unknown;
}

export type SampleFlag = 'no-trainable' | 'all-equal-group' | 'cut-at-limit';

export const FLAG_LABELS: Record<SampleFlag, string> = {
  'no-trainable': 'No trainable token',
  'all-equal-group': 'Group rewards all equal (no gradient)',
  'cut-at-limit': 'Cut at the token limit',
};

/** End reasons that mean the episode was cut by a length limit (runtime/rollout.ts). */
const CUT_REASONS = new Set(['max-tokens', 'context', 'length']);

export interface Segment {
  text: string;
  trainable: boolean;
  role: string;
  /** The policy's tokens with the sampler's log-probability of each (runs that stored them). */
  tokens: Array<{ text: string; logprob: number }> | null;
}

/** The transcript's segments, whatever the stored JSON holds (anything else is dropped). */
export function segmentsOf(sample: Pick<SampleLike, 'segments'>): Segment[] {
  if (!Array.isArray(sample.segments)) return [];
  return sample.segments.filter(
    (s): s is Segment => typeof s === 'object' && s !== null && typeof (s as Segment).text === 'string' && typeof (s as Segment).trainable === 'boolean',
  ).map((s) => ({ text: s.text, trainable: s.trainable, role: typeof s.role === 'string' ? s.role : 'context', tokens: tokensOf(s.tokens) }));
}

function tokensOf(value: unknown): Segment['tokens'] {
  if (!Array.isArray(value)) return null;
  const tokens = value.filter((t): t is { text: string; logprob: number } => typeof t === 'object' && t !== null && typeof t.text === 'string' && typeof t.logprob === 'number' && Number.isFinite(t.logprob));
  return tokens.length === value.length ? tokens : null;
}

function field(info: unknown, name: string): unknown {
  return typeof info === 'object' && info !== null && !Array.isArray(info) ? (info as Record<string, unknown>)[name] : undefined;
}

/** The sample's group (its task sampled together), as a key; null when the run has none. */
export function groupOf(sample: Pick<SampleLike, 'step' | 'info'>): string | null {
  const g = field(sample.info, 'group');
  return typeof g === 'number' || typeof g === 'string' ? `${sample.step}:${g}` : null;
}

/** The task the sample played, as text for "same prompt across steps"; null when unknown. */
export function taskOf(sample: Pick<SampleLike, 'info'>): string | null {
  const t = field(sample.info, 'task');
  if (t === undefined || t === null) return null;
  return typeof t === 'string' ? t : JSON.stringify(t);
}

/** Groups (of two samples or more) whose rewards are all equal. */
function flatGroups(samples: readonly SampleLike[]): Set<string> {
  const rewards = new Map<string, number[]>();
  for (const s of samples) {
    const g = groupOf(s);
    if (g !== null) rewards.set(g, [...(rewards.get(g) ?? []), s.reward]);
  }
  return new Set([...rewards].filter(([, r]) => r.length > 1 && r.every((v) => v === r[0])).map(([g]) => g));
}

/** Flags of each sample, keyed by `${step}:${index}`. */
export function sampleFlags(samples: readonly SampleLike[]): Map<string, SampleFlag[]> {
  const flat = flatGroups(samples);
  const out = new Map<string, SampleFlag[]>();
  for (const s of samples) {
    const flags: SampleFlag[] = [];
    if (!segmentsOf(s).some((seg) => seg.trainable && seg.text.length > 0)) flags.push('no-trainable');
    const g = groupOf(s);
    if (g !== null && flat.has(g)) flags.push('all-equal-group');
    if (s.endReason !== null && CUT_REASONS.has(s.endReason)) flags.push('cut-at-limit');
    out.set(`${s.step}:${s.index}`, flags);
  }
  return out;
}

