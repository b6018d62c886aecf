'use client';
import { useQuery } from '@tanstack/react-query';
import { useTRPC } from '../trpc';

/** A checkpoint as a picker offers it: its id and what the user recognises it by. */
export interface CheckpointChoice {
  id: string;
  /** The run that wrote it and the step: "train cmg4x1a2b3 · step 40". */
  label: string;
}

/** Checkpoints listed in a picker (the newest; older ones are on the checkpoints page). */
const LIMIT = 50;

/**
 * The team's sampler checkpoints written by runs on one environment, newest first: what can play
 * its seats in the play console, and what the launcher offers as a frozen opponent.
 */
export function useEnvironmentCheckpoints(teamId: string, environmentId: string): CheckpointChoice[] {
  const trpc = useTRPC();
  const list = useQuery({ ...trpc.runs.teamCheckpoints.queryOptions({ teamId, kind: 'SAMPLER', environmentId, offset: 0, limit: LIMIT }), enabled: !!environmentId });
  return (list.data?.checkpoints ?? []).map((c) => ({ id: c.id, label: `${c.job ? `${c.job.kind.toLowerCase()} ${c.job.id.slice(0, 10)}` : 'deleted run'} · step ${c.step}` }));
}
