'use client';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import type { inferRouterOutputs } from '@trpc/server';
import Link from 'next/link';
import { useEffect, useId, useRef, useState, type FormEvent, type ReactNode } from 'react';
import { slurmSettingsSchema, type SlurmSettings } from '../../sdk/provider-protocol';
import type { AppRouter } from '../../server/api/root';
import { useTRPC } from '../trpc';
import { ConfirmButton, ErrorNote, Loading, Reason, SecretBox } from './components';
import { formatDateTime } from './format';
import { refetchAfterChange } from './refresh';

type Provider = inferRouterOutputs<AppRouter>['providers']['list'][number];
type Launch = Provider['launches'][number];

/** The agent polls every few seconds; the page follows at about that pace, faster while launches move. */
const PROVIDERS_REFETCH_MS = 5_000;
const LIVE_LAUNCHES_REFETCH_MS = 3_000;
/** An agent silent this long is probably not running (it polls every 5 s by default). */
const AGENT_STALE_S = 60;
const LIVE_STATES = new Set(['ORDERED', 'SUBMITTING', 'PENDING', 'RUNNING']);

/** The settings fields, in the form's order, with what each means. */
const NUMBER_FIELDS = [
  ['maxWorkers', 'Max workers', 'Workers this provider keeps at most (running and pending).'],
  ['maxPendingLaunches', 'Max pending launches', 'Slurm jobs waiting in the queue at once: no launch storm.'],
  ['devicesPerWorker', 'Devices per worker', 'Must equal the count in GRES.'],
  ['cpusPerWorker', 'CPUs per worker', '--cpus-per-task'],
  ['memoryMbPerWorker', 'Memory per worker (MB)', '--mem'],
  ['idleSeconds', 'Idle seconds', 'A worker idle this long drains and hands its node back.'],
  ['registerTimeoutSeconds', 'Register timeout (s)', 'A running Slurm job whose worker has not registered by then is cancelled.'],
  ['noticeSeconds', 'Notice seconds', 'Slurm’s warning before the time limit or a preemption (--signal).'],
] as const;
type NumberField = (typeof NUMBER_FIELDS)[number][0];
const TEXT_FIELDS = [
  ['account', 'Account', 'Optional: --account'],
  ['qos', 'QOS', 'Optional: --qos'],
  ['gres', 'GRES', 'Optional, name[:type]:count, e.g. gpu:a100:1'],
  ['timeLimit', 'Time limit', 'Minutes, H:MM:SS or D-HH:MM:SS'],
] as const;
type FormField = 'name' | keyof SlurmSettings;

/** The schema's defaults (what a provider gets for a field left as is). */
const DEFAULTS: SlurmSettings = slurmSettingsSchema.parse({ partition: 'x', installPath: '/x' });

interface FormState {
  name: string;
  partition: string;
  installPath: string;
  account: string;
  qos: string;
  gres: string;
  timeLimit: string;
  deviceKind: SlurmSettings['deviceKind'];
  extraDirectives: string;
  numbers: Record<NumberField, string>;
}

function formStateOf(name: string, s: Partial<SlurmSettings>): FormState {
  const d = { ...DEFAULTS, ...s };
  return {
    name,
    partition: s.partition ?? '',
    installPath: s.installPath ?? '',
    account: d.account ?? '',
    qos: d.qos ?? '',
    gres: d.gres ?? '',
    timeLimit: d.timeLimit,
    deviceKind: d.deviceKind,
    extraDirectives: d.extraDirectives.join('\n'),
    numbers: Object.fromEntries(NUMBER_FIELDS.map(([k]) => [k, String(d[k])])) as Record<NumberField, string>,
  };
}

/** The form's text as the settings object the schema checks: blanks left out (their defaults apply). */
function settingsInput(f: FormState): Record<string, unknown> {
  const out: Record<string, unknown> = { partition: f.partition.trim(), installPath: f.installPath.trim(), deviceKind: f.deviceKind };
  for (const [k] of TEXT_FIELDS) if (f[k].trim()) out[k] = f[k].trim();
  for (const [k] of NUMBER_FIELDS) if (f.numbers[k].trim()) out[k] = Number(f.numbers[k]);
  out.extraDirectives = f.extraDirectives.split('\n').map((l) => l.trim()).filter(Boolean);
  return out;
}

/** One message per field from zod's issues (the client's check, or the server's answer). */
function fieldErrorsOf(issues: ReadonlyArray<{ path: ReadonlyArray<PropertyKey>; message: string }>): Partial<Record<FormField, string>> {
  const errors: Partial<Record<FormField, string>> = {};
  for (const issue of issues) {
    const path = issue.path[0] === 'settings' ? issue.path.slice(1) : issue.path;
    const field = (typeof path[0] === 'string' ? path[0] : 'partition') as FormField;
    // The schema names the field ("partition: letters, …"); beside the field, the name is said already.
    const message = issue.message.replace(/^[A-Za-z]+: /, '');
    errors[field] ??= message.charAt(0).toUpperCase() + message.slice(1);
  }
  return errors;
}

function serverIssues(error: unknown): Array<{ path: PropertyKey[]; message: string }> | null {
  const issues = (error as { data?: { issues?: unknown } } | null)?.data?.issues;
  return Array.isArray(issues) && issues.length ? (issues as Array<{ path: PropertyKey[]; message: string }>) : null;
}

/** Seconds since, in few words: "3 s ago", "4 min ago". */
function ago(value: Date | string, now: number): string {
  const s = Math.max(0, Math.round((now - new Date(value).getTime()) / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}

function age(value: Date | string, now: number): string {
  return ago(value, now).replace(/ ago$/, '');
}

/** A clock for "3 s ago" that moves between refetches. */
function useNow(everyMs = 1_000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(timer);
  }, [everyMs]);
  return now;
}

interface ProviderOps {
  /** "this team’s pool", "the shared pool" */
  poolLabel: string;
  /** Where this pool's registration tokens are made (workers started by hand). */
  tokensHref: string;
  tokensPage: string;
  providers: { data?: Provider[]; isPending: boolean; isLoadingError: boolean; error: unknown };
  create: (input: { name: string; kind: 'SLURM'; settings: SlurmSettings }) => Promise<{ name: string; token: string }>;
  update: (input: { providerId: string; settings: SlurmSettings }) => Promise<unknown>;
  remove: (providerId: string) => void;
  removePending: boolean;
  removeError: unknown;
}

/**
 * The workers a team's own providers are starting: launches ordered, pending or running on the
 * cluster whose worker has not registered yet, by provider. The Workers list says so while it is
 * empty, instead of "no worker" (admins: providers are theirs to see).
 */
export function useStartingWorkers(teamId: string, enabled: boolean): { provider: string; count: number; pending: number }[] {
  const trpc = useTRPC();
  const providers = useQuery({
    ...trpc.providers.list.queryOptions({ teamId }),
    enabled,
    refetchInterval: (q) => (q.state.data?.some((p) => p.launches.some((l) => LIVE_STATES.has(l.state))) ? LIVE_LAUNCHES_REFETCH_MS : PROVIDERS_REFETCH_MS),
  });
  return (providers.data ?? []).flatMap((p) => {
    const starting = p.launches.filter((l) => LIVE_STATES.has(l.state) && !l.worker);
    const pending = starting.filter((l) => l.state !== 'RUNNING').length;
    return starting.length > 0 ? [{ provider: p.name, count: starting.length, pending }] : [];
  });
}

/** A team's own pool's providers (team admins). */
export function TeamClusterProviders({ teamId, teamName }: { teamId: string; teamName: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const providers = useQuery({
    ...trpc.providers.list.queryOptions({ teamId }),
    refetchInterval: (q) => (q.state.data?.some((p) => p.launches.some((l) => LIVE_STATES.has(l.state))) ? LIVE_LAUNCHES_REFETCH_MS : PROVIDERS_REFETCH_MS),
  });
  const invalidate = () => refetchAfterChange(queryClient, trpc.providers.list.queryKey({ teamId }));
  const create = useMutation(trpc.providers.create.mutationOptions({ onSuccess: invalidate }));
  const update = useMutation(trpc.providers.update.mutationOptions({ onSuccess: invalidate }));
  const remove = useMutation(trpc.providers.delete.mutationOptions({ onSuccess: invalidate }));
  return (
    <ClusterProviders
      poolLabel={`${teamName}’s pool`}
      tokensHref={`/teams/${teamId}/workers`}
      tokensPage="Workers"
      providers={providers}
      create={(input) => create.mutateAsync({ teamId, ...input })}
      update={(input) => update.mutateAsync({ teamId, ...input })}
      remove={(providerId) => remove.mutate({ teamId, providerId })}
      removePending={remove.isPending}
      removeError={remove.error}
    />
  );
}

/** The shared pool's providers (installation admins). */
export function SharedClusterProviders() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const providers = useQuery({
    ...trpc.providers.listShared.queryOptions(),
    refetchInterval: (q) => (q.state.data?.some((p) => p.launches.some((l) => LIVE_STATES.has(l.state))) ? LIVE_LAUNCHES_REFETCH_MS : PROVIDERS_REFETCH_MS),
  });
  const invalidate = () => refetchAfterChange(queryClient, trpc.providers.listShared.queryKey());
  const create = useMutation(trpc.providers.createShared.mutationOptions({ onSuccess: invalidate }));
  const update = useMutation(trpc.providers.updateShared.mutationOptions({ onSuccess: invalidate }));
  const remove = useMutation(trpc.providers.deleteShared.mutationOptions({ onSuccess: invalidate }));
  return (
    <ClusterProviders
      poolLabel="the shared pool"
      tokensHref="/account"
      tokensPage="Account"
      providers={providers}
      create={(input) => create.mutateAsync(input)}
      update={(input) => update.mutateAsync(input)}
      remove={(providerId) => remove.mutate({ providerId })}
      removePending={remove.isPending}
      removeError={remove.error}
    />
  );
}

function agentCommand(origin: string, token = 'wsp_…'): string {
  return `WHETSTONE_PROVIDER_TOKEN=${token} npx whetstone provider slurm --server ${origin}`;
}

function useOrigin(): string {
  const [origin, setOrigin] = useState('');
  useEffect(() => setOrigin(window.location.origin), []);
  return origin;
}

/** A pool's providers: one card each, a form for a new one, and the new credential shown once. */
function ClusterProviders(props: ProviderOps) {
  const [creating, setCreating] = useState(false);
  const [shown, setShown] = useState<{ name: string; token: string } | null>(null);
  const origin = useOrigin();
  const now = useNow();
  const newButton = useRef<HTMLButtonElement>(null);
  const { data, isPending, isLoadingError, error } = props.providers;

  return (
    <>
      {shown ? (
        <SecretBox label={`Agent credential of “${shown.name}”`} value={shown.token} onDismiss={() => setShown(null)}>
          <p className="hint">
            Shown only once: the server keeps only its hash. On the cluster’s login node, in the Whetstone checkout on the shared
            filesystem, start the agent with it in its environment (or in a file only you can read, with <code>--token-file FILE</code>):
          </p>
          <CommandLine label="Agent command" text={agentCommand(origin, shown.token)} />
        </SecretBox>
      ) : null}

      {isPending ? (
        <Loading label="Loading cluster providers…" />
      ) : isLoadingError ? (
        <ErrorNote error={error} />
      ) : (
        <>
          {data && data.length === 0 && !creating ? (
            <div className="provider-empty">
              <h3>No cluster provider</h3>
              <p className="muted">
              Workers start only by hand: a worker daemon with a registration token from the{' '}
              <Link href={props.tokensHref}>{props.tokensPage}</Link> page. Add a Slurm provider (<strong>New provider</strong>{' '}
              below) and Whetstone starts workers in your partition when jobs of {props.poolLabel} wait, up to its limits, and
              hands the nodes back when they are idle.
              </p>
            </div>
          ) : null}
          <ErrorNote error={props.removeError} />
          <div className="providers">
            {data?.map((p) => (
              <ProviderCard key={p.id} provider={p} now={now} origin={origin} ops={props} />
            ))}
          </div>
        </>
      )}

      {creating ? (
        <ProviderForm
          title="New Slurm provider"
          submitLabel="Create provider"
          initial={formStateOf('', {})}
          onCancel={() => {
            setCreating(false);
            requestAnimationFrame(() => newButton.current?.focus());
          }}
          onSubmit={async (name, settings) => {
            setShown(null);
            const created = await props.create({ name, kind: 'SLURM', settings });
            setCreating(false);
            setShown({ name: created.name, token: created.token });
          }}
        />
      ) : (
        <div className="actions">
          <button ref={newButton} type="button" className="btn btn-primary" onClick={() => setCreating(true)}>
            New provider
          </button>
        </div>
      )}
    </>
  );
}

function CommandLine({ label, text }: { label: string; text: string }) {
  const [copied, setCopied] = useState<'yes' | 'no' | null>(null);
  return (
    <div className="copy-block">
      <div className="copy-head">
        <span className="small muted">{label}</span>
        <button
          type="button"
          className="btn btn-small"
          onClick={() =>
            navigator.clipboard.writeText(text).then(
              () => setCopied('yes'),
              () => setCopied('no'),
            )
          }
        >
          Copy command
        </button>
      </div>
      <pre className="code-sample" tabIndex={0} aria-label={label}>
        {text}
      </pre>
      <p className="hint" aria-live="polite">
        {copied === 'yes' ? 'Command copied.' : copied === 'no' ? 'Could not copy: select the text and copy it by hand.' : null}
      </p>
    </div>
  );
}

function ProviderCard({ provider: p, now, origin, ops }: { provider: Provider; now: number; origin: string; ops: ProviderOps }) {
  const [editing, setEditing] = useState(false);
  const editButton = useRef<HTMLButtonElement>(null);
  const titleId = useId();
  const s = { ...DEFAULTS, ...(p.settings as Partial<SlurmSettings>) };
  const live = p.launches.filter((l) => LIVE_STATES.has(l.state));
  const ended = p.launches.filter((l) => !LIVE_STATES.has(l.state));
  const running = live.filter((l) => l.state === 'RUNNING').length;
  const pending = live.length - running;
  const seenS = p.lastSeenAt ? (now - new Date(p.lastSeenAt).getTime()) / 1000 : null;
  const backoff = p.backoffUntil && new Date(p.backoffUntil).getTime() > now ? new Date(p.backoffUntil) : null;

  return (
    <article className="provider-card" aria-labelledby={titleId}>
      <header className="provider-head">
        <div className="provider-title">
          <h3 id={titleId}>{p.name}</h3>
          <span className="badge badge-kind">{p.kind.toLowerCase()}</span>
          <code className="muted small" title="The agent credential’s first characters">
            {p.prefix}…
          </code>
        </div>
        <div className="row-actions">
          <button
            ref={editButton}
            type="button"
            className="btn btn-small"
            aria-expanded={editing}
            aria-label={`Edit settings of ${p.name}`}
            onClick={() => setEditing((e) => !e)}
          >
            Edit settings
          </button>
          <ConfirmButton
            label="Delete"
            accessibleName={`Delete provider ${p.name}`}
            question={`Delete “${p.name}”? It launches no more workers; ones already running stay until idle.`}
            confirmLabel="Yes, delete"
            pending={ops.removePending}
            onConfirm={() => ops.remove(p.id)}
          />
        </div>
      </header>

      <p className={`provider-agent ${seenS === null ? 'agent-never' : seenS > AGENT_STALE_S ? 'agent-stale' : 'agent-ok'}`}>
        <span className="agent-dot" aria-hidden="true" />
        {seenS === null ? (
          <span>
            Agent: never polled. Run this on a login node, with the credential shown when the provider was made:
            <code className="agent-command" tabIndex={0}>
              {agentCommand(origin)}
            </code>
          </span>
        ) : (
          <span title={formatDateTime(p.lastSeenAt)}>
            Agent: last poll {ago(p.lastSeenAt!, now)}
            {seenS > AGENT_STALE_S ? ' — is it still running? Start it again with the same credential.' : ''}
          </span>
        )}
        <span className="muted small provider-counts">
          {running} running · {pending} pending of {s.maxWorkers} workers
        </span>
      </p>

      <dl className="provider-limits" aria-label={`Settings of ${p.name}`}>
        <Limit term="Partition" value={<code>{s.partition}</code>} />
        <Limit term="GRES" value={s.gres ? <code>{s.gres}</code> : <span className="muted">none</span>} />
        <Limit term="Max workers" value={s.maxWorkers} />
        <Limit term="Max pending" value={s.maxPendingLaunches} />
        <Limit term="Devices per worker" value={`${s.devicesPerWorker} ${s.deviceKind}`} />
        <Limit term="Idle seconds" value={s.idleSeconds} />
        <Limit term="Time limit" value={<code>{s.timeLimit}</code>} />
        {s.account ? <Limit term="Account" value={<code>{s.account}</code>} /> : null}
        {s.qos ? <Limit term="QOS" value={<code>{s.qos}</code>} /> : null}
      </dl>

      {p.lastError ? (
        <div className="notice notice-error provider-error">
          <strong>Last error</strong>
          {p.failures > 0 ? ` (${p.failures} failed in a row)` : ''}: <span className="provider-error-text">{p.lastError}</span>
          <span className="provider-backoff">
            {backoff
              ? `No launch before ${backoff.toLocaleTimeString()} (in ${Math.max(1, Math.round((backoff.getTime() - now) / 1000))} s). Fix the settings to retry at once.`
              : 'Backoff over: the next waiting job launches again.'}
          </span>
        </div>
      ) : null}

      {editing ? (
        <ProviderForm
          title={`Settings of ${p.name}`}
          submitLabel="Save settings"
          nameLocked
          initial={formStateOf(p.name, p.settings as Partial<SlurmSettings>)}
          onCancel={() => {
            setEditing(false);
            requestAnimationFrame(() => editButton.current?.focus());
          }}
          onSubmit={async (_name, settings) => {
            await ops.update({ providerId: p.id, settings });
            setEditing(false);
            requestAnimationFrame(() => editButton.current?.focus());
          }}
        />
      ) : null}

      {live.length === 0 ? (
        <p className="muted small">No launch under way: workers are launched when this pool’s jobs wait for capacity.</p>
      ) : (
        <LaunchTable label={`Launches of ${p.name}`} launches={live} now={now} />
      )}
      {ended.length > 0 ? (
        <details className="provider-ended">
          <summary>
            Ended launches ({ended.length}
            {ended.length === 50 ? ' latest' : ''})
          </summary>
          <LaunchTable label={`Ended launches of ${p.name}`} launches={ended} now={now} />
        </details>
      ) : null}
    </article>
  );
}

function Limit({ term, value }: { term: string; value: ReactNode }) {
  return (
    <div>
      <dt>{term}</dt>
      <dd>{value}</dd>
    </div>
  );
}

const LAUNCH_STATE_TONE: Record<string, string> = {
  ORDERED: 'pending',
  SUBMITTING: 'pending',
  PENDING: 'pending',
  RUNNING: 'running',
  ENDED: 'ended',
  FAILED: 'failed',
  CANCELLED: 'ended',
};

function LaunchTable({ label, launches, now }: { label: string; launches: Launch[]; now: number }) {
  return (
    <div className="table-wrap">
      <table className="table launch-table" aria-label={label}>
        <thead>
          <tr>
            <th scope="col">State</th>
            <th scope="col">Slurm job</th>
            <th scope="col">Reason</th>
            <th scope="col">Worker</th>
            <th scope="col">Age</th>
          </tr>
        </thead>
        <tbody>
          {launches.map((l) => (
            <tr key={l.id}>
              <th scope="row">
                <span className={`badge launch-${LAUNCH_STATE_TONE[l.state] ?? 'ended'}`}>{l.state.toLowerCase()}</span>
              </th>
              <td className="mono">{l.externalId ?? <span className="muted">—</span>}</td>
              <td>
                {l.reason ? (
                  l.state === 'FAILED' || l.state === 'PENDING' ? (
                    <Reason text={l.reason} tone={l.state === 'FAILED' ? 'bad' : 'warn'} />
                  ) : (
                    <span className="cell-sub">{l.reason}</span>
                  )
                ) : (
                  <span className="muted">—</span>
                )}
              </td>
              <td>
                {l.worker ? (
                  <>
                    {l.worker.name}
                    <span className="cell-sub">{l.worker.state.toLowerCase()}</span>
                  </>
                ) : (
                  <span className="muted">{LIVE_STATES.has(l.state) ? 'not registered yet' : '—'}</span>
                )}
              </td>
              <td className="nowrap muted small" title={formatDateTime(l.createdAt)}>
                {age(l.createdAt, now)}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** The Slurm settings, checked field by field with the server's own schema before they are sent. */
function ProviderForm({
  title,
  submitLabel,
  initial,
  nameLocked,
  onSubmit,
  onCancel,
}: {
  title: string;
  submitLabel: string;
  initial: FormState;
  nameLocked?: boolean;
  onSubmit: (name: string, settings: SlurmSettings) => Promise<void>;
  onCancel: () => void;
}) {
  const [f, setF] = useState(initial);
  const [errors, setErrors] = useState<Partial<Record<FormField, string>>>({});
  const [other, setOther] = useState<unknown>(null);
  const [pending, setPending] = useState(false);
  const formRef = useRef<HTMLFormElement>(null);
  const titleId = useId();

  useEffect(() => {
    formRef.current?.querySelector<HTMLElement>('input:not([readonly]), select')?.focus();
  }, []);

  function focusFirstError() {
    requestAnimationFrame(() => formRef.current?.querySelector<HTMLElement>('[aria-invalid="true"]')?.focus());
  }

  async function submit(e: FormEvent) {
    e.preventDefault();
    setOther(null);
    const found: Partial<Record<FormField, string>> = {};
    if (!f.name.trim()) found.name = 'A name is required';
    const parsed = slurmSettingsSchema.safeParse(settingsInput(f));
    if (!parsed.success) Object.assign(found, { ...fieldErrorsOf(parsed.error.issues), ...found });
    setErrors(found);
    if (!parsed.success || Object.keys(found).length) {
      focusFirstError();
      return;
    }
    setPending(true);
    try {
      await onSubmit(f.name.trim(), parsed.data);
    } catch (error) {
      const issues = serverIssues(error);
      if (issues) {
        setErrors(fieldErrorsOf(issues));
        focusFirstError();
      } else setOther(error);
    } finally {
      setPending(false);
    }
  }

  const set = (patch: Partial<FormState>) => setF((prev) => ({ ...prev, ...patch }));
  const text = (k: 'name' | 'partition' | 'installPath' | (typeof TEXT_FIELDS)[number][0]) => ({
    value: f[k],
    onChange: (e: { target: { value: string } }) => set({ [k]: e.target.value }),
  });

  return (
    <form
      ref={formRef}
      className="form provider-form"
      aria-labelledby={titleId}
      noValidate
      onSubmit={submit}
      onKeyDown={(e) => {
        if (e.key === 'Escape') onCancel();
      }}
    >
      <h3 id={titleId}>{title}</h3>
      <div className="form-grid">
        <FormRow label="Name" error={errors.name} hint={nameLocked ? 'The name stays.' : 'e.g. the cluster’s name.'}>
          {(p) => <input {...p} aria-required maxLength={80} readOnly={nameLocked} {...text('name')} />}
        </FormRow>
        <FormRow label="Partition" error={errors.partition} hint="Where workers are submitted (-p).">
          {(p) => <input {...p} aria-required placeholder="gpu" autoComplete="off" {...text('partition')} />}
        </FormRow>
        <FormRow label="Install path" error={errors.installPath} hint="The Whetstone checkout on the shared filesystem.">
          {(p) => <input {...p} aria-required placeholder="/shared/whetstone" autoComplete="off" className="mono" {...text('installPath')} />}
        </FormRow>
        <FormRow label="Device kind" error={errors.deviceKind} hint="What the workers offer jobs.">
          {(p) => (
            <select {...p} value={f.deviceKind} onChange={(e) => set({ deviceKind: e.target.value as FormState['deviceKind'] })}>
              {(['CUDA', 'CPU', 'WEBGPU', 'WASM'] as const).map((k) => (
                <option key={k} value={k}>
                  {k}
                </option>
              ))}
            </select>
          )}
        </FormRow>
        {TEXT_FIELDS.map(([k, label, hint]) => (
          <FormRow key={k} label={label} error={errors[k]} hint={hint}>
            {(p) => <input {...p} autoComplete="off" {...text(k)} />}
          </FormRow>
        ))}
        {NUMBER_FIELDS.map(([k, label, hint]) => (
          <FormRow key={k} label={label} error={errors[k]} hint={hint}>
            {(p) => (
              <input
                {...p}
                type="number"
                inputMode="numeric"
                value={f.numbers[k]}
                onChange={(e) => set({ numbers: { ...f.numbers, [k]: e.target.value } })}
              />
            )}
          </FormRow>
        ))}
      </div>
      <FormRow label="Extra #SBATCH lines" error={errors.extraDirectives} hint="One option per line, e.g. --constraint=a100.">
        {(p) => <textarea {...p} rows={2} className="mono" value={f.extraDirectives} onChange={(e) => set({ extraDirectives: e.target.value })} />}
      </FormRow>
      <ErrorNote error={other} />
      <div className="actions">
        <button type="submit" className="btn btn-primary" disabled={pending}>
          {pending ? 'Saving…' : submitLabel}
        </button>
        <button type="button" className="btn" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

function FormRow({
  label,
  hint,
  error,
  children,
}: {
  label: string;
  hint?: string;
  error?: string;
  children: (props: { id: string; 'aria-describedby': string; 'aria-invalid': boolean }) => ReactNode;
}) {
  const id = useId();
  return (
    <div className={`field ${error ? 'option-error' : ''}`}>
      <label htmlFor={id}>{label}</label>
      {children({ id, 'aria-describedby': `${id}-error ${id}-hint`, 'aria-invalid': Boolean(error) })}
      <span className="field-error" id={`${id}-error`} hidden={!error}>
        {error}
      </span>
      {hint ? (
        <span className="hint" id={`${id}-hint`}>
          {hint}
        </span>
      ) : null}
    </div>
  );
}
