'use client';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import Link from 'next/link';
import { useParams, useRouter } from 'next/navigation';
import { ErrorNote, Loading, RoleBadge } from '../../_ui/components';
import { ROLE_HELP, type Role } from '../../_ui/roles';
import { AppShell, useMe } from '../../_ui/shell';
import { useTRPC } from '../../trpc';
import { refetchAfterChange } from '../../_ui/refresh';

function SignedInInvitation({ token, email }: { token: string; email: string }) {
  const trpc = useTRPC();
  const router = useRouter();
  const queryClient = useQueryClient();
  const preview = useQuery({ ...trpc.invitations.preview.queryOptions({ token }), retry: false });
  const accept = useMutation(
    trpc.invitations.accept.mutationOptions({
      onSuccess: async ({ teamId }) => {
        await refetchAfterChange(queryClient);
        router.push(`/teams/${teamId}`);
      },
    }),
  );
  if (preview.isPending) return <Loading label="Reading the invitation…" />;
  if (preview.isLoadingError) {
    return (
      <>
        <h1>This invitation cannot be used</h1>
        <ErrorNote error={preview.error} />
        <p>
          <Link href="/">Go to your teams</Link>
        </p>
      </>
    );
  }
  const { teamName, role, email: invitedEmail } = preview.data;
  const wrongEmail = invitedEmail && invitedEmail.toLowerCase() !== email.toLowerCase();
  return (
    <>
      <h1>Join {teamName}</h1>
      <p>
        You have been invited to join <strong>{teamName}</strong> as <RoleBadge role={role} />{' '}
        <span className="muted">({ROLE_HELP[role as Role]})</span>.
      </p>
      {invitedEmail ? (
        <p className={wrongEmail ? 'notice notice-warning' : 'muted'}>
          This invitation is for {invitedEmail}
          {wrongEmail ? `, but you are signed in as ${email}. Sign out and sign in with that address to accept it.` : '.'}
        </p>
      ) : (
        <p className="muted">You will join as {email}.</p>
      )}
      <ErrorNote error={accept.error} />
      <div className="actions">
        <button type="button" className="btn btn-primary" onClick={() => accept.mutate({ token })} disabled={accept.isPending || !!wrongEmail}>
          {accept.isPending ? 'Joining…' : `Accept and join ${teamName}`}
        </button>
        <Link href="/" className="btn">
          Not now
        </Link>
      </div>
    </>
  );
}

export default function InvitationPage() {
  const { token } = useParams<{ token: string }>();
  const me = useMe();
  const q = encodeURIComponent(token);
  return (
    <AppShell narrow>
      <div className="auth-card">
        {me.isPending ? (
          <Loading />
        ) : me.isLoadingError ? (
          <ErrorNote error={me.error} />
        ) : me.data ? (
          <SignedInInvitation token={token} email={me.data.user.email} />
        ) : (
          <>
            <h1>You are invited to a team</h1>
            <p>Someone has invited you to join their team on Whetstone. Sign in, or create an account, to see the invitation and accept it.</p>
            <div className="actions">
              <Link href={`/sign-up?invitation=${q}`} className="btn btn-primary">
                Create an account
              </Link>
              <Link href={`/sign-in?invitation=${q}`} className="btn">
                Sign in
              </Link>
            </div>
          </>
        )}
      </div>
    </AppShell>
  );
}
