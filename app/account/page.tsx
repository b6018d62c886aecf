'use client';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import Link from 'next/link';
import { useRouter } from 'next/navigation';
import { useEffect, useState, type FormEvent } from 'react';
import { authClient } from '../auth-client';
import { authErrorMessage } from '../_ui/auth-form';
import { ErrorNote, Field, Loading, Notice, PageTitle, RoleBadge } from '../_ui/components';
import { AppShell, useMe } from '../_ui/shell';
import { WorkerTokens } from '../_ui/worker-tokens';
import { useTRPC } from '../trpc';
import { refetchAfterChange } from '../_ui/refresh';

const MIN_PASSWORD = 10;

function Profile({ name: initial }: { name: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [name, setName] = useState(initial);
  const update = useMutation(
    trpc.account.updateProfile.mutationOptions({
      onSuccess: () => refetchAfterChange(queryClient, trpc.account.me.queryKey()),
    }),
  );
  function submit(e: FormEvent) {
    e.preventDefault();
    update.mutate({ name: name.trim() });
  }
  return (
    <form className="form form-row" onSubmit={submit} aria-label="Profile">
      <Field label="Name">
        {(props) => <input {...props} autoComplete="name" required maxLength={100} value={name} onChange={(e) => setName(e.target.value)} />}
      </Field>
      <div className="field field-submit">
        <button type="submit" className="btn btn-primary" disabled={update.isPending || name.trim() === initial}>
          {update.isPending ? 'Saving…' : 'Save name'}
        </button>
      </div>
      <ErrorNote error={update.error} />
      {update.isSuccess && name.trim() === initial ? <Notice kind="success">Name saved.</Notice> : null}
    </form>
  );
}

function ChangePassword({ email }: { email: string }) {
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [repeat, setRepeat] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [done, setDone] = useState(false);
  const [pending, setPending] = useState(false);

  async function submit(e: FormEvent) {
    e.preventDefault();
    setError(null);
    setDone(false);
    if (next.length < MIN_PASSWORD) return setError(`The new password needs at least ${MIN_PASSWORD} characters.`);
    if (next !== repeat) return setError('The two new passwords differ.');
    setPending(true);
    try {
      const result = await authClient.changePassword({ currentPassword: current, newPassword: next, revokeOtherSessions: true });
      if (result.error) {
        return setError(
          result.error.code === 'CREDENTIAL_ACCOUNT_NOT_FOUND'
            ? 'This account has no password: it signs in with the one-time link that npm start prints.'
            : authErrorMessage(result.error),
        );
      }
      setDone(true);
      setCurrent('');
      setNext('');
      setRepeat('');
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
    } finally {
      setPending(false);
    }
  }

  return (
    <form className="form" onSubmit={submit} aria-label="Change password">
      {/* Lets password managers tie the new password to the account. */}
      <input type="text" name="username" autoComplete="username" value={email} readOnly hidden />
      <div className="form-grid">
        <Field label="Current password">
          {(p) => <input {...p} type="password" autoComplete="current-password" required maxLength={128} value={current} onChange={(e) => setCurrent(e.target.value)} />}
        </Field>
        <Field label="New password" hint={`At least ${MIN_PASSWORD} characters.`}>
          {(p) => <input {...p} type="password" autoComplete="new-password" required maxLength={128} value={next} onChange={(e) => setNext(e.target.value)} />}
        </Field>
        <Field label="New password again">
          {(p) => <input {...p} type="password" autoComplete="new-password" required maxLength={128} value={repeat} onChange={(e) => setRepeat(e.target.value)} />}
        </Field>
      </div>
      <ErrorNote error={error} />
      {done ? <Notice kind="success">Password changed. Your other sessions were signed out.</Notice> : null}
      <div className="actions">
        <button type="submit" className="btn btn-primary" disabled={pending}>
          {pending ? 'Changing…' : 'Change password'}
        </button>
      </div>
    </form>
  );
}

function OpenSignUp() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const settings = useQuery(trpc.installation.settings.queryOptions());
  const set = useMutation(
    trpc.installation.setOpenSignUp.mutationOptions({
      onSuccess: (data) => queryClient.setQueryData(trpc.installation.settings.queryKey(), data),
      onSettled: () => setWanted(null),
    }),
  );
  const [wanted, setWanted] = useState<boolean | null>(null);
  if (settings.isPending) return <Loading />;
  if (settings.isLoadingError) return <ErrorNote error={settings.error} />;
  // Shows the requested state at once; the server's answer confirms it (or the error says why not).
  const open = wanted ?? settings.data.openSignUp;
  return (
    <div className="form">
      <label className="switch">
        <input type="checkbox" role="switch" checked={open} aria-busy={set.isPending} onChange={(e) => {
            setWanted(e.target.checked);
            set.mutate({ open: e.target.checked });
          }} />
        <span>Open sign-up</span>
      </label>
      <p className="hint" aria-live="polite">
        {open
          ? 'Anyone who can reach this server can create an account (and gets a team of their own).'
          : 'Sign-up is closed: only people with an invitation link can create an account.'}
      </p>
      <ErrorNote error={set.error} />
    </div>
  );
}

function SharedWorkerTokens() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const tokens = useQuery(trpc.workerTokens.listShared.queryOptions());
  const invalidate = () => refetchAfterChange(queryClient, trpc.workerTokens.listShared.queryKey());
  const create = useMutation(trpc.workerTokens.createShared.mutationOptions({ onSuccess: invalidate }));
  const revoke = useMutation(trpc.workerTokens.revokeShared.mutationOptions({ onSuccess: invalidate }));
  return (
    <WorkerTokens
      poolLabel="the shared pool"
      tokens={{ data: tokens.data, isPending: tokens.isPending, error: tokens.error }}
      create={(input) => create.mutateAsync(input)}
      createPending={create.isPending}
      createError={create.error}
      revoke={(tokenId) => revoke.mutate({ tokenId })}
      revokePending={revoke.isPending}
      revokeError={revoke.error}
    />
  );
}

export default function AccountPage() {
  const me = useMe();
  const router = useRouter();
  useEffect(() => {
    if (me.isSuccess && !me.data) router.replace('/sign-in?next=/account');
  }, [me.isSuccess, me.data, router]);

  return (
    <AppShell>
      <PageTitle title="Account" />
      {me.isPending || (me.isSuccess && !me.data) ? (
        <Loading />
      ) : me.isLoadingError ? (
        <ErrorNote error={me.error} />
      ) : me.data ? (
        <>
          <p className="muted lead">Signed in as {me.data.user.email}.</p>
          <div className="grid grid-2">
            <section className="panel" aria-labelledby="profile-title">
              <h2 id="profile-title">Profile</h2>
              <Profile key={me.data.user.name} name={me.data.user.name} />
            </section>
            <section className="panel" aria-labelledby="teams-title">
              <h2 id="teams-title">Your teams</h2>
              {me.data.teams.length === 0 ? (
                <p className="muted">You are not in any team.</p>
              ) : (
                <ul className="list">
                  {me.data.teams.map((t) => (
                    <li key={t.id}>
                      <Link href={`/teams/${t.id}`}>{t.name}</Link>
                      <RoleBadge role={t.role} />
                    </li>
                  ))}
                </ul>
              )}
              <p>
                <Link href="/teams/new">Create a team</Link>
              </p>
            </section>
          </div>
          <section className="panel" aria-labelledby="password-title">
            <h2 id="password-title">Password</h2>
            <ChangePassword email={me.data.user.email} />
          </section>
          {me.data.user.isInstallationAdmin ? (
            <>
              <h2 className="section-title">Installation</h2>
              <p className="muted">You manage this Whetstone installation.</p>
              <section className="panel" aria-labelledby="signup-title">
                <h2 id="signup-title">Sign-up</h2>
                <OpenSignUp />
              </section>
              <section className="panel" aria-labelledby="shared-title">
                <h2 id="shared-title">Shared worker pool: registration tokens</h2>
                <p className="muted">Workers registered with these tokens run jobs of every team.</p>
                <SharedWorkerTokens />
              </section>
            </>
          ) : null}
        </>
      ) : null}
    </AppShell>
  );
}
