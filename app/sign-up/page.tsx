'use client';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import Link from 'next/link';
import { useRouter, useSearchParams } from 'next/navigation';
import { Suspense, useState, type FormEvent } from 'react';
import { authClient } from '../auth-client';
import { authErrorMessage } from '../_ui/auth-form';
import { ErrorNote, Field, Loading, Notice } from '../_ui/components';
import { AppShell } from '../_ui/shell';
import { useTRPC } from '../trpc';
import { refetchAfterChange } from '../_ui/refresh';

/** The header the server reads to admit a sign-up by invitation (server/auth/invitations.ts). */
const INVITATION_HEADER = 'x-whetstone-invitation';
const MIN_PASSWORD = 10;

function SignUpForm() {
  const params = useSearchParams();
  const router = useRouter();
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const invitation = params.get('invitation');
  const settings = useQuery(trpc.installation.settings.queryOptions());
  const accept = useMutation(trpc.invitations.accept.mutationOptions());
  const [name, setName] = useState('');
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [pending, setPending] = useState(false);
  const [acceptFailed, setAcceptFailed] = useState(false);

  async function submit(e: FormEvent) {
    e.preventDefault();
    setError(null);
    if (password.length < MIN_PASSWORD) {
      setError(`The password needs at least ${MIN_PASSWORD} characters.`);
      return;
    }
    setPending(true);
    try {
      const result = await authClient.signUp.email(
        { name: name.trim(), email: email.trim(), password },
        invitation ? { headers: { [INVITATION_HEADER]: invitation } } : undefined,
      );
      if (result.error) {
        setError(authErrorMessage(result.error));
        return;
      }
      await queryClient.resetQueries();
      if (invitation) {
        try {
          const { teamId } = await accept.mutateAsync({ token: invitation });
          await refetchAfterChange(queryClient);
          router.push(`/teams/${teamId}`);
        } catch (err) {
          // The account exists and is signed in; only joining the team failed.
          setAcceptFailed(true);
          setError(err);
        }
        return;
      }
      router.push('/');
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
    } finally {
      setPending(false);
    }
  }

  if (settings.isPending) return <Loading />;
  const closed = settings.data?.openSignUp === false && !invitation;
  const signInHref = invitation ? `/sign-in?invitation=${encodeURIComponent(invitation)}` : '/sign-in';

  if (acceptFailed) {
    return (
      <div className="auth-card">
        <h1>Your account is ready</h1>
        <ErrorNote error={error} />
        <p>You are signed in, but the invitation could not be accepted. Ask the team’s admin for a new link.</p>
        <p>
          <Link href="/" className="btn btn-primary">
            Continue
          </Link>
        </p>
      </div>
    );
  }

  return (
    <div className="auth-card">
      <h1>Create your Whetstone account</h1>
      {settings.isLoadingError ? <ErrorNote error={settings.error} /> : null}
      {invitation ? (
        <Notice>You are signing up with an invitation: you join the team as soon as your account is created.</Notice>
      ) : null}
      {closed ? (
        <>
          <ErrorNote error="Sign-up is by invitation only on this installation. Ask an admin for an invitation link." />
          <p className="auth-switch">
            Already have an account? <Link href="/sign-in">Sign in</Link>
          </p>
        </>
      ) : (
        <>
          <form onSubmit={submit} className="form" aria-label="Sign up">
            <Field label="Name">
              {(props) => (
                <input {...props} name="name" autoComplete="name" required maxLength={100} value={name} onChange={(e) => setName(e.target.value)} />
              )}
            </Field>
            <Field label="E-mail">
              {(props) => (
                <input {...props} type="email" name="email" autoComplete="email" required maxLength={320} value={email} onChange={(e) => setEmail(e.target.value)} />
              )}
            </Field>
            <Field label="Password" hint={`At least ${MIN_PASSWORD} characters.`}>
              {(props) => (
                <input
                  {...props}
                  type="password"
                  name="password"
                  autoComplete="new-password"
                  required
                  minLength={MIN_PASSWORD}
                  maxLength={128}
                  value={password}
                  onChange={(e) => setPassword(e.target.value)}
                />
              )}
            </Field>
            <ErrorNote error={error} />
            <button type="submit" className="btn btn-primary btn-block" disabled={pending}>
              {pending ? 'Creating your account…' : invitation ? 'Create account and join' : 'Create account'}
            </button>
          </form>
          <p className="auth-switch">
            Already have an account? <Link href={signInHref}>Sign in</Link>
          </p>
        </>
      )}
    </div>
  );
}

export default function SignUpPage() {
  return (
    <AppShell narrow>
      <Suspense fallback={<Loading />}>
        <SignUpForm />
      </Suspense>
    </AppShell>
  );
}
