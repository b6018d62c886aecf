'use client';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useTRPC } from '../trpc';
import { ConfirmButton, ErrorNote } from './components';
import { refetchAfterChange } from './refresh';
import { useTeam } from './team-context';

/**
 * An admin's drain, resume and revoke of one of the team's own workers (the Workers and Cluster
 * pages); shared workers (the local worker of `npm start` among them) are the installation admins'.
 */
export function WorkerActions({ teamId, worker }: { teamId: string; worker: { id: string; name: string; pool: string; state: string } }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const invalidate = () => refetchAfterChange(queryClient, trpc.workers.list.queryKey({ teamId }));
  const drain = useMutation(trpc.workers.drain.mutationOptions({ onSuccess: invalidate }));
  const resume = useMutation(trpc.workers.resume.mutationOptions({ onSuccess: invalidate }));
  const revoke = useMutation(trpc.workers.revoke.mutationOptions({ onSuccess: invalidate }));
  const { isInstallationAdmin } = useTeam();
  if (worker.pool !== 'team' && !isInstallationAdmin) return <span className="muted small">installation admins manage shared workers</span>;
  return (
    <>
      {worker.state === 'OFFLINE' ? null : worker.state !== 'DRAINING' ? (
        <ConfirmButton
          label="Drain"
          accessibleName={`Drain ${worker.name}`}
          question={`Drain ${worker.name}? It takes no new work; running jobs finish.`}
          confirmLabel="Yes, drain"
          danger={false}
          pending={drain.isPending}
          onConfirm={() => drain.mutate({ teamId, workerId: worker.id })}
        />
      ) : (
        <button type="button" className="btn btn-small" aria-label={`Resume ${worker.name}`} disabled={resume.isPending} onClick={() => resume.mutate({ teamId, workerId: worker.id })}>
          {resume.isPending ? 'Resuming…' : 'Resume'}
        </button>
      )}
      <ConfirmButton
        label="Revoke"
        accessibleName={`Revoke ${worker.name}`}
        question={`Revoke ${worker.name}? It can no longer call the server.`}
        confirmLabel="Yes, revoke"
        pending={revoke.isPending}
        onConfirm={() => revoke.mutate({ teamId, workerId: worker.id })}
      />
      <ErrorNote error={drain.error ?? resume.error ?? revoke.error} />
    </>
  );
}
