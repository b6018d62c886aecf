'use client';
import { useQuery } from '@tanstack/react-query';
import { useTRPC } from '../../trpc';
import { ErrorNote, Loading } from '../components';
import { NotFound } from '../empty-state';
import { isNotFound } from '../errors';
import { useTeam } from '../team-context';

/** One of the team's imported models, as its page and its playground load it (a missing one is not retried). */
export function useTeamModel(modelId: string) {
  const team = useTeam();
  const trpc = useTRPC();
  return useQuery({ ...trpc.models.get.queryOptions({ teamId: team.id, modelId }), retry: (n, e) => !isNotFound(e) && n < 2 });
}

/**
 * What a model's pages show before its first answer: loading, not found (with the way back to
 * the team's models), or the error. A page renders it while `useTeamModel(...).data` is undefined;
 * a failed refetch keeps the model shown.
 */
export function ModelNotLoaded({ model, modelId }: { model: ReturnType<typeof useTeamModel>; modelId: string }) {
  const team = useTeam();
  if (model.isLoadingError && isNotFound(model.error)) {
    return <NotFound kind="model" id={modelId} teamName={team.name} back={{ href: `/teams/${team.id}/models`, label: 'See the team’s models' }} />;
  }
  if (model.isLoadingError) return <ErrorNote error={model.error} />;
  return <Loading label="Loading the model…" />;
}
