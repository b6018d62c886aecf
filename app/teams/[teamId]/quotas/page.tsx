'use client';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type ChangeEvent, type FormEvent } from 'react';
import { ErrorNote, Field, Loading, Notice, PageTitle } from '../../../_ui/components';
import { formatBytes, formatDateTime } from '../../../_ui/format';
import { Meter } from '../../../_ui/meter';
import { atLeast } from '../../../_ui/roles';
import { useTeam } from '../../../_ui/team-context';
import { useTRPC } from '../../../trpc';
import { refetchAfterChange } from '../../../_ui/refresh';

interface Limits {
  maxConcurrentDevices: number;
  maxQueuedJobs: number;
  maxPriority: number;
  defaultTimeLimitSeconds: number;
  streamStorageBytes: bigint;
}

const GIB = 2 ** 30;

function QuotaForm({ initial, teamId }: { initial: Limits; teamId: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [values, setValues] = useState({
    maxConcurrentDevices: String(initial.maxConcurrentDevices),
    maxQueuedJobs: String(initial.maxQueuedJobs),
    maxPriority: String(initial.maxPriority),
    defaultTimeLimitHours: String(initial.defaultTimeLimitSeconds / 3600),
    streamStorageGiB: String(Number(initial.streamStorageBytes) / GIB),
  });
  const [saved, setSaved] = useState(false);
  const update = useMutation(
    trpc.quotas.update.mutationOptions({
      onSuccess: () => {
        setSaved(true);
        return refetchAfterChange(queryClient, trpc.quotas.get.queryKey({ teamId }));
      },
    }),
  );
  const set = (k: keyof typeof values) => (e: ChangeEvent<HTMLInputElement>) => {
    setSaved(false);
    setValues((v) => ({ ...v, [k]: e.target.value }));
  };
  function submit(e: FormEvent) {
    e.preventDefault();
    setSaved(false);
    update.mutate({
      teamId,
      maxConcurrentDevices: Number(values.maxConcurrentDevices),
      maxQueuedJobs: Number(values.maxQueuedJobs),
      maxPriority: Number(values.maxPriority),
      defaultTimeLimitSeconds: Math.round(Number(values.defaultTimeLimitHours) * 3600),
      streamStorageBytes: Math.round(Number(values.streamStorageGiB) * GIB),
    });
  }
  const fields: Array<{ key: keyof typeof values; label: string; hint: string; max: number; min?: number; step?: number | 'any' }> = [
    { key: 'maxConcurrentDevices', label: 'Concurrent devices', hint: 'Devices the team’s running jobs may hold at once.', max: 10_000 },
    { key: 'maxQueuedJobs', label: 'Queued jobs', hint: 'Jobs that may wait in the queue at once.', max: 100_000 },
    { key: 'maxPriority', label: 'Highest priority for members', hint: 'Admins may go up to 1000.', max: 1000 },
    { key: 'defaultTimeLimitHours', label: 'Default time limit (hours)', hint: 'Jobs submitted without a limit stop after this long.', max: 720, min: 0.02, step: 'any' },
    {
      key: 'streamStorageGiB', label: 'Stream storage (GiB)', max: 2 ** 20, step: 'any',
      hint: 'Logs, metrics, rollouts and matches the team’s runs keep. Past it runs train on and their new stream data is not stored.',
    },
  ];
  return (
    <form className="form" onSubmit={submit} aria-label="Edit quotas">
      <div className="form-grid">
        {fields.map((f) => (
          <Field key={f.key} label={f.label} hint={f.hint}>
            {(props) => (
              <input {...props} type="number" inputMode="decimal" min={f.min ?? 0} max={f.max} step={f.step ?? 1} required value={values[f.key]} onChange={set(f.key)} />
            )}
          </Field>
        ))}
      </div>
      <ErrorNote error={update.error} />
      {saved ? <Notice kind="success">Quotas saved.</Notice> : null}
      <div className="actions">
        <button type="submit" className="btn btn-primary" disabled={update.isPending}>
          {update.isPending ? 'Saving…' : 'Save quotas'}
        </button>
      </div>
    </form>
  );
}

export default function QuotasPage() {
  const trpc = useTRPC();
  const team = useTeam();
  const quota = useQuery(trpc.quotas.get.queryOptions({ teamId: team.id }));
  const isAdmin = atLeast(team.role, 'ADMIN');
  return (
    <>
      <PageTitle title="Quotas" />
      <p className="muted lead">Limits on what this team’s jobs may use. The scheduler enforces them.</p>
      {quota.isPending ? (
        <Loading />
      ) : quota.isLoadingError ? (
        <ErrorNote error={quota.error} />
      ) : (
        <div className="grid grid-2">
          <section className="panel" aria-labelledby="usage-title">
            <h2 id="usage-title">Usage now</h2>
            <Meter label="Devices in use" used={quota.data.usage.devicesInUse} limit={quota.data.maxConcurrentDevices} />
            <Meter label="Queued jobs" used={quota.data.usage.queuedJobs} limit={quota.data.maxQueuedJobs} />
            <Meter
              label="Stream storage"
              used={Number(quota.data.usage.streamStorageBytes)}
              limit={Number(quota.data.streamStorageBytes)}
              format={formatBytes}
            />
            {quota.data.usage.streamStorageBytes >= quota.data.streamStorageBytes ? (
              <Notice kind="warning">Stream storage is full: runs train on, but what they stream is not stored. Delete old runs or raise the quota.</Notice>
            ) : null}
          </section>
          <section className="panel" aria-labelledby="limits-title">
            <h2 id="limits-title">Limits</h2>
            {isAdmin ? (
              <QuotaForm initial={quota.data} teamId={team.id} />
            ) : (
              <>
                <dl className="facts" aria-label="Quota limits">
                  <dt>Concurrent devices</dt>
                  <dd>{quota.data.maxConcurrentDevices}</dd>
                  <dt>Queued jobs</dt>
                  <dd>{quota.data.maxQueuedJobs}</dd>
                  <dt>Highest priority for members</dt>
                  <dd>{quota.data.maxPriority}</dd>
                  <dt>Default time limit</dt>
                  <dd>{quota.data.defaultTimeLimitSeconds / 3600} h</dd>
                  <dt>Stream storage</dt>
                  <dd>{formatBytes(quota.data.streamStorageBytes)}</dd>
                </dl>
                <p className="muted small">Only admins of this team change quotas.</p>
              </>
            )}
            <p className="muted small">Last changed {formatDateTime(quota.data.updatedAt)}.</p>
          </section>
        </div>
      )}
    </>
  );
}
