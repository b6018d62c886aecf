'use client';
import { useQueryClient } from '@tanstack/react-query';
import Link from 'next/link';
import { useRouter, useSearchParams } from 'next/navigation';
import { Suspense, useState, type FormEvent } from 'react';
import { authClient } from '../auth-client';
import { authErrorMessage, safeNext } from '../_ui/auth-form';
import { ErrorNote, Field, Loading, Notice } from '../_ui/components';
import { AppShell, useMe } from '../_ui/shell';

function SignInForm() {
  const params = useSearchParams();
  const router = useRouter();
  const queryClient = useQueryClient();
  const me = useMe();
  const invitation = params.get('invitation');
  const next = safeNext(params.get('next')) ?? (invitation ? `/invite/${encodeURIComponent(invitation)}` : '/');
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [pending, setPending] = useState(false);

  async function submit(e: FormEvent) {
    e.preventDefault();
    setError(null);
    setPending(true);
    try {
      const result = await authClient.signIn.email({ email: email.trim(), password });
      if (result.error) {
        setError(authErrorMessage(result.error));
        return;
      }
      await queryClient.resetQueries();
      router.push(next);
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
    } finally {
      setPending(false);
    }
  }

  const signUpHref = invitation ? `/sign-up?invitation=${encodeURIComponent(invitation)}` : '/sign-up';
  return (
    <div className="auth-card">
      <h1>Sign in to Whetstone</h1>
      {params.get('error') === 'link' ? (
        <ErrorNote error="This sign-in link was already used or has expired. Sign in with your e-mail and password, or use the newest link printed by npm start." />
      ) : null}
      {invitation ? <Notice>Sign in to accept your team invitation.</Notice> : null}
      {me.data ? (
        <Notice>
          You are signed in as {me.data.user.email}. <Link href={next}>Continue</Link>
        </Notice>
      ) : null}
      <form onSubmit={submit} className="form" aria-label="Sign in" noValidate={false}>
        <Field label="E-mail">
          {(props) => (
            <input {...props} type="email" name="email" autoComplete="email" required maxLength={320} value={email} onChange={(e) => setEmail(e.target.value)} />
          )}
        </Field>
        <Field label="Password">
          {(props) => (
            <input {...props} type="password" name="password" autoComplete="current-password" required maxLength={128} value={password} onChange={(e) => setPassword(e.target.value)} />
          )}
        </Field>
        <ErrorNote error={error} />
        <button type="submit" className="btn btn-primary btn-block" disabled={pending}>
          {pending ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
      <p className="auth-switch">
        New here? <Link href={signUpHref}>Create an account</Link>
      </p>
    </div>
  );
}

export default function SignInPage() {
  return (
    <AppShell narrow>
      <Suspense fallback={<Loading />}>
        <SignInForm />
      </Suspense>
    </AppShell>
  );
}
