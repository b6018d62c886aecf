import { transformer } from '../../sdk/transformer';

/**
 * A tRPC call over HTTP with an API key, as the CLI makes it: input and answer through the shared
 * transformer, so bigints, dates and user keys come back as the client sees them. Throws the
 * error's message.
 */
export async function apiCall<T>(url: string, apiKey: string, procedure: string, input: unknown, kind: 'query' | 'mutation' = 'query'): Promise<T> {
  const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
  const payload = JSON.stringify(transformer.serialize(input));
  const res =
    kind === 'query'
      ? await fetch(`${url}/api/trpc/${procedure}?input=${encodeURIComponent(payload)}`, { headers })
      : await fetch(`${url}/api/trpc/${procedure}`, { method: 'POST', headers, body: payload });
  const body = (await res.json()) as { result?: { data: unknown }; error?: { json?: { message?: string } } };
  if (!body.result) throw new Error(`${procedure}: ${body.error?.json?.message ?? JSON.stringify(body.error)}`);
  return transformer.deserialize(body.result.data) as T;
}
