'use client';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useTRPC } from '../trpc';
import { ConfirmButton, ErrorNote } from './components';
import { refetchAfterChange } from './refresh';

/**
 * An admin's drain and revoke of one of the team's own workers (the Workers and Cluster pages);
 * shared workers are the installation admins' to manage.
 */
export function WorkerActions({ teamId, worker }: { teamId: string; worker: { id: string; name: string; pool: string; state: string } }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const invalidate = () => refetchAfterChange(queryClient, trpc.workers.list.queryKey({ teamId }));
  const drain = useMutation(trpc.workers.drain.mutationOptions({ onSuccess: invalidate }));
  const revoke = useMutation(trpc.workers.revoke.mutationOptions({ onSuccess: invalidate }));
  if (worker.pool !== 'team') return <span className="muted small">installation admins manage shared workers</span>;
  return (
    <>
      {worker.state !== 'DRAINING' ? (
        <ConfirmButton
          label="Drain"
          accessibleName={`Drain ${worker.name}`}
          question={`Drain ${worker.name}? It takes no new work; running jobs finish.`}
          confirmLabel="Yes, drain"
          danger={false}
          pending={drain.isPending}
          onConfirm={() => drain.mutate({ teamId, workerId: worker.id })}
        />
      ) : null}
      <ConfirmButton
        label="Revoke"
        accessibleName={`Revoke ${worker.name}`}
        question={`Revoke ${worker.name}? It can no longer call the server.`}
        confirmLabel="Yes, revoke"
        pending={revoke.isPending}
        onConfirm={() => revoke.mutate({ teamId, workerId: worker.id })}
      />
      <ErrorNote error={drain.error ?? revoke.error} />
    </>
  );
}
