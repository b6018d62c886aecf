'use client';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useRouter } from 'next/navigation';
import { useState, type FormEvent } from 'react';
import { ConfirmButton, ErrorNote, Field, Loading, PageTitle, RoleBadge, SecretBox, StatusBadge } from '../../../_ui/components';
import { formatDate, formatDateTime } from '../../../_ui/format';
import { atLeast, ROLE_HELP, roleLabel, ROLES, type Role } from '../../../_ui/roles';
import { useTeam } from '../../../_ui/team-context';
import { useTRPC } from '../../../trpc';
import { refetchAfterChange } from '../../../_ui/refresh';

function RoleEditor({ userId, name, role, options }: { userId: string; name: string; role: Role; options: Role[] }) {
  const trpc = useTRPC();
  const team = useTeam();
  const queryClient = useQueryClient();
  const [chosen, setChosen] = useState<Role>(role);
  const change = useMutation(
    trpc.members.changeRole.mutationOptions({
      onSuccess: () => refetchAfterChange(queryClient, trpc.members.list.queryKey({ teamId: team.id })),
    }),
  );
  return (
    <div className="inline-form">
      <label className="sr-only" htmlFor={`role-${userId}`}>
        Role of {name}
      </label>
      <select id={`role-${userId}`} value={chosen} onChange={(e) => setChosen(e.target.value as Role)}>
        {options.map((r) => (
          <option key={r} value={r}>
            {roleLabel(r)}
          </option>
        ))}
      </select>
      <button
        type="button"
        className="btn btn-small"
        disabled={chosen === role || change.isPending}
        onClick={() => change.mutate({ teamId: team.id, userId, role: chosen })}
        aria-label={`Save role of ${name}`}
      >
        {change.isPending ? 'Saving…' : 'Save'}
      </button>
      {change.error ? <ErrorNote error={change.error} className="inline-error" /> : null}
    </div>
  );
}

function MembersTable() {
  const trpc = useTRPC();
  const team = useTeam();
  const router = useRouter();
  const queryClient = useQueryClient();
  const members = useQuery(trpc.members.list.queryOptions({ teamId: team.id }));
  const refresh = () => refetchAfterChange(queryClient);
  const remove = useMutation(trpc.members.remove.mutationOptions({ onSuccess: refresh }));
  const transfer = useMutation(trpc.members.transferOwnership.mutationOptions({ onSuccess: refresh }));
  const leave = useMutation(
    trpc.members.leave.mutationOptions({
      onSuccess: async () => {
        // Only the team list: refetching this team's pages now would show "no such team".
        await refetchAfterChange(queryClient, trpc.account.me.queryKey());
        router.push('/');
      },
    }),
  );

  if (members.isPending) return <Loading />;
  if (members.isLoadingError) return <ErrorNote error={members.error} />;
  const isOwner = team.role === 'OWNER';
  const isAdmin = atLeast(team.role, 'ADMIN');
  return (
    <>
      <ErrorNote error={remove.error ?? transfer.error ?? leave.error} />
      <div className="table-wrap">
        <table className="table">
          <caption className="sr-only">Members of {team.name}</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">E-mail</th>
              <th scope="col">Role</th>
              <th scope="col">Joined</th>
              <th scope="col">
                <span className="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {members.data.map((m) => {
              const self = m.user.id === team.userId;
              const role = m.role as Role;
              const canEditRole = isAdmin && !self && (isOwner || role !== 'OWNER');
              const options = ROLES.filter((r) => isOwner || r !== 'OWNER');
              return (
                <tr key={m.user.id}>
                  <th scope="row">
                    {m.user.name}
                    {self ? <span className="muted"> (you)</span> : null}
                  </th>
                  <td>{m.user.email}</td>
                  <td>
                    {canEditRole ? (
                      <RoleEditor userId={m.user.id} name={m.user.name} role={role} options={options} />
                    ) : (
                      <RoleBadge role={role} />
                    )}
                  </td>
                  <td>{formatDate(m.createdAt)}</td>
                  <td className="row-actions">
                    {self ? (
                      <ConfirmButton
                        label="Leave team"
                        question={`Leave ${team.name}?`}
                        confirmLabel="Yes, leave"
                        pending={leave.isPending}
                        onConfirm={() => leave.mutate({ teamId: team.id })}
                      />
                    ) : null}
                    {isOwner && !self && role !== 'OWNER' ? (
                      <ConfirmButton
                        label="Make owner"
                        accessibleName={`Make ${m.user.name} owner`}
                        question={`Make ${m.user.name} the owner? You stay on as admin.`}
                        confirmLabel="Yes, transfer"
                        danger={false}
                        pending={transfer.isPending}
                        onConfirm={() => transfer.mutate({ teamId: team.id, userId: m.user.id })}
                      />
                    ) : null}
                    {isAdmin && !self && (isOwner || role !== 'OWNER') ? (
                      <ConfirmButton
                        label="Remove"
                        accessibleName={`Remove ${m.user.name}`}
                        question={`Remove ${m.user.name}? Their environments and runs stay with the team.`}
                        confirmLabel="Yes, remove"
                        pending={remove.isPending}
                        onConfirm={() => remove.mutate({ teamId: team.id, userId: m.user.id })}
                      />
                    ) : null}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
    </>
  );
}

const EXPIRIES = [
  { hours: 1, label: '1 hour' },
  { hours: 24, label: '1 day' },
  { hours: 72, label: '3 days' },
  { hours: 168, label: '7 days' },
  { hours: 720, label: '30 days' },
];

function Invitations() {
  const trpc = useTRPC();
  const team = useTeam();
  const queryClient = useQueryClient();
  const invitations = useQuery(trpc.invitations.list.queryOptions({ teamId: team.id }));
  const invalidate = () => refetchAfterChange(queryClient, trpc.invitations.list.queryKey({ teamId: team.id }));
  const create = useMutation(trpc.invitations.create.mutationOptions({ onSuccess: invalidate }));
  const revoke = useMutation(trpc.invitations.revoke.mutationOptions({ onSuccess: invalidate }));
  const [role, setRole] = useState<Role>('MEMBER');
  const [email, setEmail] = useState('');
  const [hours, setHours] = useState(72);
  const [link, setLink] = useState<string | null>(null);
  const roles = ROLES.filter((r) => atLeast(team.role, r));

  function submit(e: FormEvent) {
    e.preventDefault();
    setLink(null);
    create.mutate(
      { teamId: team.id, role, expiresInHours: hours, ...(email.trim() ? { email: email.trim() } : {}) },
      { onSuccess: (created) => setLink(created.link) },
    );
  }

  return (
    <section className="panel" aria-labelledby="invitations-title">
      <h2 id="invitations-title">Invitations</h2>
      <p className="muted">
        An invitation is a link that admits one person, once, before it expires. Send it yourself: Whetstone does not send
        e-mail.
      </p>
      <form className="form form-row" onSubmit={submit} aria-label="Create an invitation">
        <Field label="Role" hint={ROLE_HELP[role]}>
          {(props) => (
            <select {...props} value={role} onChange={(e) => setRole(e.target.value as Role)}>
              {roles.map((r) => (
                <option key={r} value={r}>
                  {roleLabel(r)}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Expires after">
          {(props) => (
            <select {...props} value={hours} onChange={(e) => setHours(Number(e.target.value))}>
              {EXPIRIES.map((x) => (
                <option key={x.hours} value={x.hours}>
                  {x.label}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Only for e-mail (optional)">
          {(props) => (
            <input {...props} type="email" maxLength={320} placeholder="anyone with the link" value={email} onChange={(e) => setEmail(e.target.value)} />
          )}
        </Field>
        <div className="field field-submit">
          <button type="submit" className="btn btn-primary" disabled={create.isPending}>
            {create.isPending ? 'Creating…' : 'Create invitation link'}
          </button>
        </div>
      </form>
      <ErrorNote error={create.error} />
      {link ? (
        <SecretBox label="Invitation link" value={link} onDismiss={() => setLink(null)}>
          <p className="hint">This link is shown only once. Copy it now and send it to the person you invite.</p>
        </SecretBox>
      ) : null}

      <h3>Sent invitations</h3>
      <ErrorNote error={revoke.error} />
      {invitations.isPending ? (
        <Loading />
      ) : invitations.isLoadingError ? (
        <ErrorNote error={invitations.error} />
      ) : invitations.data.length === 0 ? (
        <p className="muted">No invitations yet.</p>
      ) : (
        <div className="table-wrap">
          <table className="table" aria-label="Invitations">
            <thead>
              <tr>
                <th scope="col">Role</th>
                <th scope="col">For</th>
                <th scope="col">Status</th>
                <th scope="col">Expires</th>
                <th scope="col">Invited by</th>
                <th scope="col">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {invitations.data.map((inv) => (
                <tr key={inv.id}>
                  <td>
                    <RoleBadge role={inv.role} />
                  </td>
                  <td>{inv.email ?? <span className="muted">anyone with the link</span>}</td>
                  <td>
                    <StatusBadge status={inv.status} />
                  </td>
                  <td>{formatDateTime(inv.expiresAt)}</td>
                  <td>{inv.invitedBy.name}</td>
                  <td className="row-actions">
                    {inv.status === 'pending' ? (
                      <ConfirmButton
                        label="Revoke"
                        accessibleName={`Revoke ${roleLabel(inv.role as Role).toLowerCase()} invitation created ${formatDateTime(inv.createdAt)}`}
                        question="Revoke this invitation?"
                        confirmLabel="Yes, revoke"
                        pending={revoke.isPending}
                        onConfirm={() => revoke.mutate({ teamId: team.id, invitationId: inv.id })}
                      />
                    ) : null}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

export default function MembersPage() {
  const team = useTeam();
  return (
    <>
      <PageTitle title="Members" />
      <section className="panel" aria-label="Members">
        <MembersTable />
      </section>
      {atLeast(team.role, 'ADMIN') ? <Invitations /> : <p className="muted">Admins of this team invite new members.</p>}
    </>
  );
}
