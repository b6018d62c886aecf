import pg from 'pg';

class DatabaseUnreachableError extends Error {}

/**
 * Connects once to check that the database answers, and turns a failure into a message a
 * person can act on: which host and port, and what to check.
 */
export async function checkDatabaseReachable(databaseUrl: string, timeoutMs = 8000): Promise<void> {
  const url = new URL(databaseUrl);
  const where = `${url.hostname}:${url.port || 5432}`;
  const database = decodeURIComponent(url.pathname.slice(1)) || '(default)';
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: timeoutMs });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('SELECT 1');
  } catch (error) {
    const err = error as NodeJS.ErrnoException & { code?: string };
    let hint = 'Check that PostgreSQL is running there and that DATABASE_URL is right.';
    if (err.code === 'ECONNREFUSED') hint = 'Nothing accepts connections there: is PostgreSQL running, on that port?';
    else if (err.code === 'ENOTFOUND' || err.code === 'EAI_AGAIN') hint = `The host name ${url.hostname} does not resolve.`;
    else if (err.code === '3D000') hint = `The database "${database}" does not exist: create it (createdb ${database}) or name another.`;
    else if (err.code === '28P01' || err.code === '28000') hint = 'The server refused the user or password in DATABASE_URL.';
    else if (/timeout/i.test(err.message)) hint = `No answer within ${timeoutMs / 1000} s: check the host, port and any firewall.`;
    throw new DatabaseUnreachableError(
      `Cannot connect to PostgreSQL at ${where} (database "${database}", from DATABASE_URL): ${err.message}\n  ${hint}`,
    );
  } finally {
    await client.end().catch(() => {});
  }
}
