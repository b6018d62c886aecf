'use client';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useRef, useState, type FormEvent, type RefObject } from 'react';
import { MAX_SECRET_VALUE_LENGTH, SECRET_NAME_PATTERN } from '../../../../sdk/team-secrets';
import { ConfirmButton, ErrorNote, Field, Loading, Notice, PageTitle } from '../../../_ui/components';
import { formatDateTime, formatRelative } from '../../../_ui/format';
import { atLeast } from '../../../_ui/roles';
import { useTeam } from '../../../_ui/team-context';
import { useTRPC } from '../../../trpc';
import { refetchAfterChange } from '../../../_ui/refresh';

const MANIFEST_EXAMPLE = `"server": {
  "urls": ["https://game.example.com"],
  "headers": { "Authorization": { "secret": "GAME_TOKEN", "prefix": "Bearer " } }
}`;

/** Sets a secret (new, or a new value for one that exists). The value never comes back from the server. */
function SetSecretForm({ name, onName, valueRef }: { name: string; onName: (name: string) => void; valueRef: RefObject<HTMLInputElement | null> }) {
  const trpc = useTRPC();
  const team = useTeam();
  const queryClient = useQueryClient();
  const [value, setValue] = useState('');
  const [saved, setSaved] = useState<{ name: string; created: boolean } | null>(null);
  const set = useMutation(
    trpc.secrets.set.mutationOptions({
      onSuccess: (result) => {
        setSaved(result);
        setValue('');
        return refetchAfterChange(queryClient, trpc.secrets.list.queryKey({ teamId: team.id }));
      },
    }),
  );
  function submit(e: FormEvent) {
    e.preventDefault();
    setSaved(null);
    set.mutate({ teamId: team.id, name: name.trim(), value });
  }
  return (
    <form className="form form-row" onSubmit={submit} aria-label="Set a secret">
      <Field label="Name" hint="Upper-case letters, digits and underscores, e.g. GAME_TOKEN. An existing name gets the new value.">
        {(props) => (
          <input
            {...props}
            required
            maxLength={64}
            pattern={SECRET_NAME_PATTERN.source}
            autoComplete="off"
            spellCheck={false}
            value={name}
            onChange={(e) => {
              setSaved(null);
              onName(e.target.value.toUpperCase());
            }}
          />
        )}
      </Field>
      <Field label="Value" hint="Stored encrypted; never shown again, to anyone.">
        {(props) => (
          <input
            {...props}
            ref={valueRef}
            type="password"
            required
            maxLength={MAX_SECRET_VALUE_LENGTH}
            autoComplete="new-password"
            spellCheck={false}
            value={value}
            onChange={(e) => {
              setSaved(null);
              setValue(e.target.value);
            }}
          />
        )}
      </Field>
      <div className="field field-submit">
        <button type="submit" className="btn btn-primary" disabled={set.isPending || name.trim() === '' || value === ''}>
          {set.isPending ? 'Saving…' : 'Set secret'}
        </button>
      </div>
      <ErrorNote error={set.error} />
      {saved ? (
        <Notice kind="success">
          {saved.created ? 'Created' : 'Replaced'} <code>{saved.name}</code>. Its value is not shown again: environments that name it get it when they play.
        </Notice>
      ) : null}
    </form>
  );
}

export default function SecretsPage() {
  const trpc = useTRPC();
  const team = useTeam();
  const queryClient = useQueryClient();
  const secrets = useQuery(trpc.secrets.list.queryOptions({ teamId: team.id }));
  const remove = useMutation(trpc.secrets.delete.mutationOptions({ onSuccess: () => refetchAfterChange(queryClient, trpc.secrets.list.queryKey({ teamId: team.id })) }));
  const isAdmin = atLeast(team.role, 'ADMIN');
  const [name, setName] = useState('');
  const valueRef = useRef<HTMLInputElement>(null);

  function replace(secretName: string) {
    setName(secretName);
    valueRef.current?.focus();
  }

  return (
    <>
      <PageTitle title="Secrets" />
      <p className="muted lead">
        Tokens and keys that HTTP environments send as headers, kept out of manifests, which every member can read. Whetstone stores
        each value encrypted and never shows it again; only what plays the environment (the worker running the team’s job, a
        save’s dry run, the play console) gets it.
      </p>
      {isAdmin ? (
        <section className="panel" aria-labelledby="set-secret-title">
          <h2 id="set-secret-title">Set a secret</h2>
          <SetSecretForm name={name} onName={setName} valueRef={valueRef} />
        </section>
      ) : (
        <Notice>Team admins set, replace and delete secrets; you see their names, to use them in a manifest.</Notice>
      )}

      <section className="panel" aria-labelledby="secrets-title">
        <h2 id="secrets-title">Secrets in this team</h2>
        <ErrorNote error={remove.error} />
        {secrets.isPending ? (
          <Loading />
        ) : secrets.isLoadingError ? (
          <ErrorNote error={secrets.error} />
        ) : secrets.data.length === 0 ? (
          <p className="muted">
            No secrets yet. {isAdmin ? 'Set one above, then name it in an HTTP environment’s manifest.' : 'Ask a team admin to set the ones your environments need.'}
          </p>
        ) : (
          <div className="table-wrap">
            <table className="table" aria-label="Secrets">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Set by</th>
                  <th scope="col">Last set</th>
                  {isAdmin ? (
                    <th scope="col">
                      <span className="sr-only">Actions</span>
                    </th>
                  ) : null}
                </tr>
              </thead>
              <tbody>
                {secrets.data.map((s) => (
                  <tr key={s.id}>
                    <th scope="row">
                      <code>{s.name}</code>
                    </th>
                    <td>{s.setBy?.name ?? <span className="muted">a former member</span>}</td>
                    <td title={formatDateTime(s.updatedAt)}>{formatRelative(s.updatedAt)}</td>
                    {isAdmin ? (
                      <td className="row-actions">
                        <button type="button" className="btn btn-small" aria-label={`Replace ${s.name}`} onClick={() => replace(s.name)}>
                          Replace
                        </button>
                        <ConfirmButton
                          label="Delete"
                          accessibleName={`Delete ${s.name}`}
                          question={`Delete ${s.name}? Environments that use it fail until it is set again.`}
                          confirmLabel="Yes, delete"
                          pending={remove.isPending}
                          onConfirm={() => remove.mutate({ teamId: team.id, name: s.name })}
                        />
                      </td>
                    ) : null}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>

      <section className="panel" aria-labelledby="use-secret-title">
        <h2 id="use-secret-title">Use one in a manifest</h2>
        <p className="hint">
          An HTTP environment names a secret in its <code>server.headers</code>; a job, a dry run or a play session whose secret is not
          set fails, naming it.
        </p>
        <pre className="code-sample">{MANIFEST_EXAMPLE}</pre>
      </section>
    </>
  );
}
