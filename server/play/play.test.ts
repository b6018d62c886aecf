import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadTemplate } from '../../env-templates/load-template';
import { runJob } from '../../gpu-worker/job-runner/run-job';
import { JobControl, MemorySink } from '../../gpu-worker/job-runner/sink';
import { testBackend } from '../../gpu-worker/test-support/engine/test-setup';
import { templateEnvironment, testAssignment } from '../../gpu-worker/test-support/job-runner/assignments';
import type { AutoplayResult, PlayOpenResult, PlaySession, PlaySessionSummary, PlayStepResult } from '../../sdk/play';
import { seedTeam, waitUntil } from '../test-support/reliability/harness';
import { startHttpBandit } from '../../gpu-worker/test-support/http-bandit-server';
import { useTestServer } from '../test-support/test-server';

// The play console's API through tRPC, against real PostgreSQL and real play processes: bandit and
// gomoku by hand, a user error at the user's line, autoplay, the per-team cap, a killed process,
// and (with a short idle time) a session that ends on its own.

type Answer<T> = { ok: true; value: T } | { ok: false; code: string; message: string };

async function call<T>(url: string, apiKey: string, procedure: string, input: unknown, kind: 'query' | 'mutation' = 'mutation'): Promise<Answer<T>> {
  const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
  const res =
    kind === 'mutation'
      ? await fetch(`${url}/api/trpc/${procedure}`, { method: 'POST', headers, body: JSON.stringify({ json: input }) })
      : await fetch(`${url}/api/trpc/${procedure}?input=${encodeURIComponent(JSON.stringify({ json: input }))}`, { headers });
  const body = (await res.json()) as { error?: { json: { message: string; data: { code: string } } }; result?: { data: { json: T } } };
  if (body.error) return { ok: false, code: body.error.json.data.code, message: body.error.json.message };
  return { ok: true, value: body.result!.data.json };
}

async function must<T>(answer: Promise<Answer<T>>): Promise<T> {
  const a = await answer;
  if (!a.ok) throw new Error(`${a.code}: ${a.message}`);
  return a.value;
}

function opened(result: PlayOpenResult): PlaySession {
  if (!result.ok) throw new Error(`not opened: ${JSON.stringify(result)}`);
  return result;
}

const gomoku = loadTemplate('gomoku');
const math = loadTemplate('math');
const draftOf = (t: ReturnType<typeof loadTemplate>) => ({ draft: { entry: t.source.entry, files: t.source.files, manifest: t.rawManifest } });
const PAYING: Record<string, string> = { red: 'C', green: 'A', blue: 'D', yellow: 'B' };

/** A multi-turn environment whose step throws on "boom" (line THROW_LINE) and loops for ever on "loop". */
const TRAP = `import { defineEnvironment } from 'whetstone';
export default defineEnvironment<undefined, { n: number }>({
  name: 'trap',
  systemPrompt: 'Say anything.',
  sample: () => undefined,
  reset(ctx) { ctx.state = { n: 0 }; console.log('reset'); return 'go'; },
  step(action, ctx) {
    ctx.state.n++;
    if (action === 'boom') throw new Error('the user asked for it');
    if (action === 'loop') for (;;) {}
    return { observation: 'turn ' + ctx.state.n, reward: 0.5, terminated: false };
  },
});
`;
const THROW_LINE = TRAP.split('\n').findIndex((l) => l.includes("throw new Error('the user asked for it')")) + 1;
const trapDraft = {
  draft: { entry: 'env.ts', files: { 'env.ts': TRAP }, manifest: { name: 'trap', version: '1.0.0', kind: 'multi-turn', limits: { maxTurns: 5, maxTokensPerTurn: 4, maxResponseTokens: 40 } } },
};

describe('play sessions through the API', () => {
  const ctx = useTestServer({ play: { perTeam: 2 } });

  it('bandit, saved version: one turn with the reward, then the session has ended', async () => {
    const team = await seedTeam(ctx.t.db);
    const { url } = ctx.server;
    const session = opened(await must(call<PlayOpenResult>(url, team.apiKey, 'play.open', { teamId: team.teamId, source: { versionId: team.envVersionId }, seed: 7 })));
    expect(session).toMatchObject({ seat: 'agent', seed: 7, turn: 0, done: false, endReason: null, history: [], returns: { agent: 0 }, maxTurns: 1, idleMs: 600_000, error: null });
    expect(session.description).toMatchObject({ kind: 'single-turn', agents: ['agent'], bots: ['oracle', 'random'] });
    expect(session.systemPrompt).toBe('Answer with one letter: A, B, C or D.');
    const colour = (session.task as { colour: string }).colour;
    expect(session.observation).toBe(`colour: ${colour}\narm:`);
    expect(await must(call<PlaySessionSummary[]>(url, team.apiKey, 'play.list', { teamId: team.teamId }, 'query'))).toMatchObject([{ sessionId: session.sessionId, seat: 'agent', environment: 'bandit' }]);

    const step = await must(call<PlayStepResult>(url, team.apiKey, 'play.step', { teamId: team.teamId, sessionId: session.sessionId, action: PAYING[colour] }));
    expect(step).toMatchObject({
      turn: { agent: 'agent', by: { user: true }, action: PAYING[colour], rewards: { agent: 1 }, terminated: true, truncated: false, info: { arm: PAYING[colour], valid: true }, next: null },
      botTurns: [], observation: null, done: true, endReason: 'terminated', returns: { agent: 1 }, error: null,
    });
    const late = await call(url, team.apiKey, 'play.step', { teamId: team.teamId, sessionId: session.sessionId, action: 'A' });
    expect(late).toMatchObject({ ok: false, code: 'NOT_FOUND', message: 'This play session has ended: the episode ended (terminated). Open a new one.' });
    expect(await must(call(url, team.apiKey, 'play.close', { teamId: team.teamId, sessionId: session.sessionId }))).toEqual({ closed: false });
    expect(await must(call(url, team.apiKey, 'play.list', { teamId: team.teamId }, 'query'))).toEqual([]);
  });

  it('an HTTP environment (a draft naming its server): the user plays its live server; one that is down is a clear error', async () => {
    const team = await seedTeam(ctx.t.db);
    const { url } = ctx.server;
    const bandit = await startHttpBandit();
    try {
      const manifest = { name: 'http-bandit', version: '1.0.0', kind: 'single-turn', limits: { maxTurns: 1, maxTokensPerTurn: 2, maxResponseTokens: 2 }, server: { urls: [bandit.url] } };
      const draft = { draft: { entry: 'env.ts', files: { 'README.md': 'Served over HTTP.' }, manifest } };
      const session = opened(await must(call<PlayOpenResult>(url, team.apiKey, 'play.open', { teamId: team.teamId, source: draft, seed: 2 })));
      expect(session).toMatchObject({ seat: 'agent', done: false, description: { kind: 'single-turn', agents: ['agent'], bots: [] }, systemPrompt: 'Answer with one letter: A, B, C or D.' });
      const colour = /^colour: (\w+)\narm:$/.exec(session.observation ?? '')![1];
      const step = await must(call<PlayStepResult>(url, team.apiKey, 'play.step', { teamId: team.teamId, sessionId: session.sessionId, action: PAYING[colour] }));
      expect(step).toMatchObject({ turn: { rewards: { agent: 1 }, terminated: true }, done: true, returns: { agent: 1 } });
      expect(bandit.calls).toMatchObject({ resets: 1, steps: 1, finalized: 1 });

      const closed = await startHttpBandit();
      await closed.close();
      const down = { draft: { ...draft.draft, manifest: { ...manifest, server: { urls: [closed.url], retries: 0 } } } };
      const failed = await must(call<PlayOpenResult>(url, team.apiKey, 'play.open', { teamId: team.teamId, source: down, seed: 2 }));
      expect(failed).toMatchObject({ ok: false, error: { message: expect.stringContaining(`${closed.url}/health is unavailable: cannot connect (ECONNREFUSED)`) } });
    } finally {
      await bandit.close();
    }
  });

  it("an HTTP environment behind a token: the console sends the team secret its manifest names; without it, the error names the secret", async () => {
    const team = await seedTeam(ctx.t.db);
    const { url } = ctx.server;
    const guarded = await startHttpBandit({ token: 'play-token-7' });
    try {
      const server = { urls: [guarded.url], retries: 0, headers: { Authorization: { secret: 'PLAY_TOKEN', prefix: 'Bearer ' } } };
      const manifest = { name: 'guarded', version: '1.0.0', kind: 'single-turn', limits: { maxTurns: 1, maxTokensPerTurn: 2, maxResponseTokens: 2 }, server };
      const source = { draft: { entry: 'env.ts', files: { 'README.md': 'Behind a token.' }, manifest } };
      const unset = await must(call<PlayOpenResult>(url, team.apiKey, 'play.open', { teamId: team.teamId, source, seed: 2 }));
      expect(unset).toMatchObject({ ok: false, error: { message: expect.stringMatching(/the team secret PLAY_TOKEN, which is not set: a team admin sets it under the team's Secrets/) } });
      expect(guarded.calls.resets).toBe(0);

      await must(call(url, team.apiKey, 'secrets.set', { teamId: team.teamId, name: 'PLAY_TOKEN', value: 'play-token-7' }));
      const session = opened(await must(call<PlayOpenResult>(url, team.apiKey, 'play.open', { teamId: team.teamId, source, seed: 2 })));
      expect(session.observation).toMatch(/^colour: \w+\narm:$/);
      expect([...guarded.calls.authorizations]).toEqual(['Bearer play-token-7']);
    } finally {
      await guarded.close();
    }
  });

  it('gomoku, unsaved draft, as white: the bot opens, a legal move is answered, an illegal one loses', async () => {
    const team = await seedTeam(ctx.t.db);
    const { url } = ctx.server;
    const session = opened(
      await must(call<PlayOpenResult>(url, team.apiKey, 'play.open', { teamId: team.teamId, source: draftOf(gomoku), seat: 'white', opponents: { black: { bot: 'scripted' } }, seed: 3 })),
    );
    expect(session).toMatchObject({ seat: 'white', opponents: { black: { bot: 'scripted' } }, task: { size: 9, winLength: 5 }, turn: 1, done: false, maxTurns: 41 });
    expect(session.history).toHaveLength(1);
    expect(session.history[0]).toMatchObject({ agent: 'black', by: { bot: 'scripted' }, info: { player: 'black', moveNumber: 1 }, next: { agent: 'white' } });
    // The compact board: the reader's stone and the bot's opening move, then one line per row.
    expect(session.observation).toMatch(/^O \d,\d\n1[.XO]{9}\n/);
    // The board from structured turns: the task's size and each turn's info.move (1-based).
    const taken = new Set(session.history.map((t) => String(t.info.move)));
    const free = ['5,5', '1,1', '9,9'].find((cell) => !taken.has(cell))!;

    const step = await must(call<PlayStepResult>(url, team.apiKey, 'play.step', { teamId: team.teamId, sessionId: session.sessionId, action: `<move>${free}</move>` }));
    expect(step).toMatchObject({ turn: { agent: 'white', by: { user: true }, info: { player: 'white', move: free.split(',').map(Number), moveNumber: 2 } }, done: false, error: null });
    expect(step.botTurns).toHaveLength(1);
    expect(step.botTurns[0]).toMatchObject({ agent: 'black', by: { bot: 'scripted' }, info: { moveNumber: 3 } });
    expect(step.observation?.split('\n')[0]).toMatch(/^O \d,\d$/); // the bot's reply, the last move

    const lost = await must(call<PlayStepResult>(url, team.apiKey, 'play.step', { teamId: team.teamId, sessionId: session.sessionId, action: 'I pass' }));
    expect(lost).toMatchObject({ turn: { rewards: { white: -1, black: 1 }, terminated: true, info: { result: 'black' } }, botTurns: [], done: true, endReason: 'terminated', returns: { white: -1, black: 1 } });
    expect(lost.turn!.info.reason).toMatch(/^invalid move by white/);
    // The game is kept as a match of the team, whole, with who played each seat (a draft's: no version).
    const match = await ctx.t.db.match.findUniqueOrThrow({ where: { id: lost.matchId! } });
    expect(match).toMatchObject({ teamId: team.teamId, jobId: null, environmentVersionId: null, winner: 'black', agents: [{ name: 'black', policy: 'bot:scripted' }, { name: 'white', policy: 'user' }] });
    expect((match.moves as Array<{ agent: string; text: string }>).map((m) => m.agent)).toEqual(['black', 'white', 'black', 'white']);
    expect((match.moves as Array<{ text: string }>)[3].text).toBe('I pass');
    expect(match.result).toMatchObject({ endReason: 'terminated', returns: { white: -1, black: 1 }, task: { size: 9, winLength: 5 } });
  });

  it('an error in the environment ends the session at the user\'s line, and a loop is stopped at the deadline', async () => {
    const team = await seedTeam(ctx.t.db);
    const { url } = ctx.server;
    const session = opened(await must(call<PlayOpenResult>(url, team.apiKey, 'play.open', { teamId: team.teamId, source: trapDraft })));
    expect(session.logs).toEqual(['reset']);
    const fine = await must(call<PlayStepResult>(url, team.apiKey, 'play.step', { teamId: team.teamId, sessionId: session.sessionId, action: 'hello' }));
    expect(fine).toMatchObject({ turn: { rewards: { agent: 0.5 }, next: { agent: 'agent', observation: 'turn 1' } }, observation: 'turn 1', returns: { agent: 0.5 }, done: false });

    const boom = await must(call<PlayStepResult>(url, team.apiKey, 'play.step', { teamId: team.teamId, sessionId: session.sessionId, action: 'boom' }));
    expect(boom).toMatchObject({ turn: null, botTurns: [], done: true, endReason: 'error', returns: { agent: 0.5 } });
    expect(boom.error).toMatchObject({ kind: 'throw', during: 'step', location: { file: 'env.ts', line: THROW_LINE } });
    expect(boom.error!.message).toMatch(/the user asked for it/);
    expect(await call(url, team.apiKey, 'play.step', { teamId: team.teamId, sessionId: session.sessionId, action: 'again' })).toMatchObject({
      ok: false, code: 'NOT_FOUND', message: expect.stringMatching(/^This play session has ended: the environment failed: step threw Error: the user asked for it/),
    });

    const looping = opened(await must(call<PlayOpenResult>(url, team.apiKey, 'play.open', { teamId: team.teamId, source: trapDraft })));
    const loop = await must(call<PlayStepResult>(url, team.apiKey, 'play.step', { teamId: team.teamId, sessionId: looping.sessionId, action: 'loop' }));
    expect(loop).toMatchObject({ done: true, endReason: 'error', error: { kind: 'timeout', location: { file: 'env.ts' } } });
    // The server answered throughout, and its other sessions' processes are untouched.
    expect((await fetch(`${url}/api/health`)).status).toBe(200);
  });

  it('refuses what cannot be played, saying why', async () => {
    const team = await seedTeam(ctx.t.db);
    const { url } = ctx.server;
    const open = (input: object) => call<PlayOpenResult>(url, team.apiKey, 'play.open', { teamId: team.teamId, ...input });
    expect(await open({ source: draftOf(gomoku), seat: 'red' })).toMatchObject({ ok: false, code: 'BAD_REQUEST', message: '"red" is not an agent of gomoku; its agents are black, white' });
    expect(await open({ source: draftOf(gomoku), seat: 'black', opponents: { white: { bot: 'alphazero' } } })).toMatchObject({
      ok: false, code: 'BAD_REQUEST', message: 'gomoku has no bot "alphazero"; its bots are scripted, expert, random',
    });
    expect(await open({ source: { versionId: 'no-such-version' } })).toMatchObject({ ok: false, code: 'NOT_FOUND', message: 'No such environment version in this team' });
    expect(await open({ source: draftOf(math) })).toMatchObject({ ok: false, code: 'BAD_REQUEST', message: expect.stringMatching(/math reads dataset rows: choose a dataset version/) });
    const broken = { draft: { ...trapDraft.draft, files: { 'env.ts': `${TRAP}\nconst x = ;\n` } } };
    const failed = await must(open({ source: broken }));
    expect(failed).toMatchObject({ ok: false, compileErrors: [{ location: { file: 'env.ts', line: TRAP.split('\n').length + 1 } }] });
    expect(await call(url, team.apiKey, 'play.step', { teamId: team.teamId, sessionId: 'no-such-session', action: 'x' })).toMatchObject({ ok: false, code: 'NOT_FOUND', message: 'No such play session' });
  });

  it('a data-dependent environment takes its task from the chosen dataset version', async () => {
    const team = await seedTeam(ctx.t.db);
    const { url } = ctx.server;
    const uploaded = await must(call<{ versionId: string }>(url, team.apiKey, 'datasets.upload', { teamId: team.teamId, name: 'sums', jsonl: '{"question":"07+45","answer":52}\n{"question":"10+20","answer":30}\n' }));
    const session = opened(await must(call<PlayOpenResult>(url, team.apiKey, 'play.open', { teamId: team.teamId, source: draftOf(math), datasetVersionId: uploaded.versionId, seed: 2 })));
    expect(session).toMatchObject({ task: { question: '07+45', answer: 52 }, observation: '07+45=' });
    const step = await must(call<PlayStepResult>(url, team.apiKey, 'play.step', { teamId: team.teamId, sessionId: session.sessionId, action: '250' }));
    expect(step).toMatchObject({ turn: { rewards: { agent: 1 }, info: { correct: true } }, done: true });
  });

  it('autoplay plays one whole episode with bots, as a transcript', async () => {
    const team = await seedTeam(ctx.t.db);
    const { url } = ctx.server;
    const oracle = await must(call<AutoplayResult>(url, team.apiKey, 'play.autoplay', { teamId: team.teamId, source: { versionId: team.envVersionId }, policy: { bot: 'oracle' }, seed: 5 }));
    if (!oracle.ok) throw new Error('autoplay failed');
    expect(oracle).toMatchObject({ players: { agent: { bot: 'oracle' } }, transcript: { seed: 5, endReason: 'terminated', totalRewards: { agent: 1 }, error: null } });
    expect(oracle.transcript.turns).toHaveLength(1);

    const game = await must(call<AutoplayResult>(url, team.apiKey, 'play.autoplay', { teamId: team.teamId, source: draftOf(gomoku), policy: { bot: 'scripted' }, opponents: { white: { random: true } }, seed: 1 }));
    if (!game.ok) throw new Error('autoplay failed');
    expect(game.players).toEqual({ black: { bot: 'scripted' }, white: { random: true } });
    expect(game.transcript.error).toBeNull();
    expect(game.transcript.turns.length).toBeGreaterThan(8);
    expect(['black', 'white', 'draw']).toContain(game.transcript.finalInfo.result);
    // A game of two agents is kept as a match; a one-agent episode is not.
    expect(oracle.matchId).toBeUndefined();
    const saved = await ctx.t.db.match.findUniqueOrThrow({ where: { id: game.matchId! } });
    expect(saved.agents).toEqual([{ name: 'black', policy: 'bot:scripted' }, { name: 'white', policy: 'random' }]);
    expect((saved.moves as unknown[]).length).toBe(game.transcript.turns.length);
    expect(game.transcript.turns.map((t) => t.agent).slice(0, 4)).toEqual(['black', 'white', 'black', 'white']);

    // Branch from here: a draft's game has no version to continue on.
    expect(await call(url, team.apiKey, 'play.branch', { teamId: team.teamId, matchId: game.matchId, move: 2, policy: { bot: 'scripted' } })).toMatchObject({ ok: false, code: 'BAD_REQUEST' });
  });

  it('branch from here: a saved version’s match replayed to a move, then continued by other players, kept as a variation', async () => {
    const team = await seedTeam(ctx.t.db);
    const other = await seedTeam(ctx.t.db);
    const { url } = ctx.server;
    const version = await must(call<{ versionId: string }>(url, team.apiKey, 'environments.create', { teamId: team.teamId, name: 'go', from: { template: 'gomoku' } }));
    const parent = await must(call<AutoplayResult>(url, team.apiKey, 'play.autoplay', { teamId: team.teamId, source: { versionId: version.versionId }, policy: { bot: 'scripted' }, opponents: { white: { random: true } }, seed: 4 }));
    if (!parent.ok || !parent.matchId) throw new Error('autoplay failed');
    const branch = await must(call<AutoplayResult>(url, team.apiKey, 'play.branch', { teamId: team.teamId, matchId: parent.matchId, move: 4, policy: { bot: 'expert' }, opponents: { black: { bot: 'scripted' } }, seed: 9 }));
    if (!branch.ok || !branch.matchId) throw new Error('branch failed');
    expect(branch.matchId).not.toBe(parent.matchId);
    // The first four moves are the parent's, on the parent's task; then the new players.
    expect(branch.transcript.turns.slice(0, 4).map((t) => t.action)).toEqual(parent.transcript.turns.slice(0, 4).map((t) => t.action));
    expect(branch.transcript.task).toEqual(parent.transcript.task);
    expect(branch.players).toEqual({ black: { bot: 'scripted' }, white: { bot: 'expert' } });
    const saved = await ctx.t.db.match.findUniqueOrThrow({ where: { id: branch.matchId } });
    expect(saved).toMatchObject({ environmentVersionId: version.versionId, result: { parent: { matchId: parent.matchId, move: 4 } } });
    // The parent lists it as a variation, with the move it left at.
    const withVariations = await must(call<{ variations: Array<{ id: string; move: number }> }>(url, team.apiKey, 'runs.match', { teamId: team.teamId, matchId: parent.matchId }, 'query'));
    expect(withVariations.variations).toEqual([expect.objectContaining({ id: branch.matchId, move: 4 })]);
    // Past the end, and another team's match, are refused.
    expect(await call(url, team.apiKey, 'play.branch', { teamId: team.teamId, matchId: parent.matchId, move: 10_000, policy: { bot: 'scripted' } })).toMatchObject({ ok: false, code: 'BAD_REQUEST' });
    expect(await call(url, other.apiKey, 'play.branch', { teamId: other.teamId, matchId: parent.matchId, move: 1, policy: { bot: 'scripted' } })).toMatchObject({ ok: false, code: 'NOT_FOUND' });
  });

  it('the user plays a side of a branch: the match replayed to a move, the user on one seat, the game kept as a variation', async () => {
    const team = await seedTeam(ctx.t.db);
    const { url } = ctx.server;
    const version = await must(call<{ versionId: string }>(url, team.apiKey, 'environments.create', { teamId: team.teamId, name: 'go', from: { template: 'gomoku' } }));
    const parent = await must(call<AutoplayResult>(url, team.apiKey, 'play.autoplay', { teamId: team.teamId, source: { versionId: version.versionId }, policy: { bot: 'scripted' }, opponents: { white: { random: true } }, seed: 4 }));
    if (!parent.ok || !parent.matchId) throw new Error('autoplay failed');
    const from = { matchId: parent.matchId, move: 4 };
    // A branch plays on its match's version.
    expect(await call(url, team.apiKey, 'play.open', { teamId: team.teamId, source: draftOf(gomoku), from })).toMatchObject({ ok: false, code: 'BAD_REQUEST', message: expect.stringMatching(/^source: a branch plays on the version/) });
    const session = opened(await must(call<PlayOpenResult>(url, team.apiKey, 'play.open', { teamId: team.teamId, source: { versionId: version.versionId }, from, seat: 'white', opponents: { black: { bot: 'scripted' } }, seed: 3 })));
    // The parent's four moves, then black (the scripted bot) once, and it is the user's turn as white.
    expect(session.history.slice(0, 4).map((t) => t.action)).toEqual(parent.transcript.turns.slice(0, 4).map((t) => t.action));
    expect(session.history.map((t) => t.agent)).toEqual(['black', 'white', 'black', 'white', 'black']);
    expect(session.task).toEqual(parent.transcript.task);
    // A move on a taken cell (the parent's first) ends the game as the rules say; it is kept as a variation.
    const step = await must(call<PlayStepResult & { matchId?: string }>(url, team.apiKey, 'play.step', { teamId: team.teamId, sessionId: session.sessionId, action: parent.transcript.turns[0].action }));
    expect(step.done).toBe(true);
    const saved = await ctx.t.db.match.findUniqueOrThrow({ where: { id: step.matchId! } });
    expect(saved).toMatchObject({ environmentVersionId: version.versionId, result: { parent: from } });
    const withVariations = await must(call<{ variations: Array<{ id: string; move: number }> }>(url, team.apiKey, 'runs.match', { teamId: team.teamId, matchId: parent.matchId }, 'query'));
    expect(withVariations.variations).toEqual([expect.objectContaining({ id: step.matchId, move: 4 })]);
  });

  it('caps open sessions per team, and a killed process ends its sessions with a clear error while other teams play on', async () => {
    const team = await seedTeam(ctx.t.db);
    const other = await seedTeam(ctx.t.db);
    const { url } = ctx.server;
    const open = (t: typeof team) => must(call<PlayOpenResult>(url, t.apiKey, 'play.open', { teamId: t.teamId, source: trapDraft })).then(opened);
    const first = await open(team);
    const second = await open(team);
    expect(await call(url, team.apiKey, 'play.open', { teamId: team.teamId, source: trapDraft })).toMatchObject({
      ok: false, code: 'TOO_MANY_REQUESTS', message: '2 play sessions are open in this team (at most 2): close one, or wait for an idle one to end',
    });
    expect(await must(call(url, team.apiKey, 'play.close', { teamId: team.teamId, sessionId: second.sessionId }))).toEqual({ closed: true });
    const third = await open(team);
    const elsewhere = await open(other);

    const pid = ctx.server.play.processIdOf(first.sessionId)!;
    expect(ctx.server.play.processIdOf(third.sessionId)).toBe(pid);
    expect(ctx.server.play.processIdOf(elsewhere.sessionId)).not.toBe(pid);
    process.kill(pid, 'SIGKILL');
    await waitUntil('the killed process\'s sessions to end', async () => (await must(call<unknown[]>(url, team.apiKey, 'play.list', { teamId: team.teamId }, 'query'))).length === 0);
    for (const s of [first, third]) {
      expect(await call(url, team.apiKey, 'play.step', { teamId: team.teamId, sessionId: s.sessionId, action: 'hi' })).toMatchObject({
        ok: false, code: 'NOT_FOUND', message: expect.stringMatching(/^This play session has ended: the environment's process stopped \(signal SIGKILL\)/),
      });
    }
    expect(await must(call<PlayStepResult>(url, other.apiKey, 'play.step', { teamId: other.teamId, sessionId: elsewhere.sessionId, action: 'hi' }))).toMatchObject({ done: false, observation: 'turn 1' });
    // The team opens again in a new process.
    const again = await open(team);
    expect(ctx.server.play.processIdOf(again.sessionId)).not.toBe(pid);
  });
});

describe('idle play sessions', () => {
  const ctx = useTestServer({ play: { idleMs: 300 } });

  it('end on their own, and a late step says so', async () => {
    const team = await seedTeam(ctx.t.db);
    const { url } = ctx.server;
    const session = opened(await must(call<PlayOpenResult>(url, team.apiKey, 'play.open', { teamId: team.teamId, source: trapDraft })));
    expect(session.idleMs).toBe(300);
    await waitUntil('the idle session to end', async () => (await must(call<unknown[]>(url, team.apiKey, 'play.list', { teamId: team.teamId }, 'query'))).length === 0);
    expect(await call(url, team.apiKey, 'play.step', { teamId: team.teamId, sessionId: session.sessionId, action: 'hi' })).toMatchObject({
      ok: false, code: 'NOT_FOUND', message: 'This play session has ended: it was idle for 300 ms. Open a new one.',
    });
  });
});

describe('checkpoints as players', () => {
  const ctx = useTestServer();
  // The sampler checkpoint of a 1-step gomoku run by the job runner (it plays badly, which is fine).
  let sampler: Uint8Array;

  beforeAll(async () => {
    await testBackend();
    const sink = new MemorySink();
    const training = { steps: 1, batchSize: 1, groupSize: 2, warmStart: null, evalEpisodes: 0, model: { layers: 1, width: 16, heads: 2, contextLength: 256 } };
    const result = await runJob(testAssignment({ config: { environmentVersionId: 'g', training }, environment: templateEnvironment('gomoku') }), sink, new JobControl());
    expect(result).toEqual({ outcome: 'succeeded', reason: '' });
    sampler = sink.checkpoints.find((c) => c.kind === 'SAMPLER')!.bytes;
  });

  /** The checkpoint stored as the server stores an upload: its bytes in the blob store, a row of the team's. */
  async function teamCheckpoint(teamId: string, bytes = sampler, claimedBytes?: bigint) {
    const stored = await ctx.server.blobs.put(Buffer.from(bytes), 'checkpoints');
    const row = await ctx.t.db.checkpoint.create({ data: { teamId, kind: 'SAMPLER', step: 1, storageKey: stored.key, bytes: claimedBytes ?? BigInt(stored.bytes), sha256: stored.sha256 } });
    return row.id;
  }

  it('a checkpoint opens as black with a legal move, answers the user, and plays a whole episode by itself', async () => {
    const team = await seedTeam(ctx.t.db);
    const { url } = ctx.server;
    const checkpointId = await teamCheckpoint(team.teamId);
    const session = opened(
      await must(call<PlayOpenResult>(url, team.apiKey, 'play.open', { teamId: team.teamId, source: draftOf(gomoku), seat: 'white', opponents: { black: { checkpointId } }, seed: 4 })),
    );
    expect(session).toMatchObject({ seat: 'white', opponents: { black: { checkpointId } }, turn: 1, done: false, error: null });
    const first = session.history[0];
    expect(first).toMatchObject({ agent: 'black', by: { checkpointId }, info: { player: 'black', moveNumber: 1 }, next: { agent: 'white' } });
    expect(first.action).toMatch(/^<move>\d,\d<\/move>$/);
    expect(first.info.result).toBeUndefined();
    expect(first.logprob).toBeLessThanOrEqual(0);

    const free = ['5,5', '1,1', '9,9'].find((cell) => String(first.info.move) !== cell)!;
    const step = await must(call<PlayStepResult>(url, team.apiKey, 'play.step', { teamId: team.teamId, sessionId: session.sessionId, action: `<move>${free}</move>` }));
    expect(step).toMatchObject({ done: false, error: null, botTurns: [{ agent: 'black', by: { checkpointId }, info: { player: 'black', moveNumber: 3 } }] });
    expect(await must(call(url, team.apiKey, 'play.close', { teamId: team.teamId, sessionId: session.sessionId }))).toEqual({ closed: true });

    const game = await must(call<AutoplayResult>(url, team.apiKey, 'play.autoplay', { teamId: team.teamId, source: draftOf(gomoku), policy: { checkpointId }, opponents: { white: { bot: 'random' } }, seed: 2 }));
    if (!game.ok) throw new Error(`autoplay failed: ${JSON.stringify(game)}`);
    expect(game.players).toEqual({ black: { checkpointId }, white: { bot: 'random' } });
    expect(game.transcript.error).toBeNull();
    expect(['black', 'white', 'draw']).toContain(game.transcript.finalInfo.result);
    expect(String(game.transcript.finalInfo.reason)).not.toMatch(/invalid move/);
    expect(game.transcript.turns.filter((t) => t.agent === 'black').length).toBeGreaterThan(2);
  });

  it("refuses another team's checkpoint as not found, and one too large or too short for the environment as a bad request", async () => {
    const team = await seedTeam(ctx.t.db);
    const other = await seedTeam(ctx.t.db);
    const { url } = ctx.server;
    const theirs = await teamCheckpoint(other.teamId);
    const open = (checkpointId: string) => call(url, team.apiKey, 'play.open', { teamId: team.teamId, source: draftOf(gomoku), seat: 'white', opponents: { black: { checkpointId } } });
    expect(await open(theirs)).toMatchObject({ ok: false, code: 'NOT_FOUND', message: 'No such checkpoint in this team' });
    expect(await call(url, team.apiKey, 'play.autoplay', { teamId: team.teamId, source: draftOf(gomoku), policy: { checkpointId: theirs } })).toMatchObject({ ok: false, code: 'NOT_FOUND' });

    const huge = await teamCheckpoint(team.teamId, sampler, 400_000_000n);
    expect(await open(huge)).toMatchObject({ ok: false, code: 'BAD_REQUEST', message: expect.stringMatching(/^checkpoint \S+ has about 100M parameters; the play console plays checkpoints of at most 8\.0M/) });

    // A checkpoint whose context cannot hold gomoku's first prompt.
    const { GPT } = await import('../../gpu-worker/engine/model');
    const { CharTokenizer } = await import('../../gpu-worker/engine/tokenizer');
    const { saveSamplerCheckpoint } = await import('../../gpu-worker/engine/checkpoint');
    const tok = new CharTokenizer();
    const model = new GPT({ layers: 1, width: 16, heads: 2, contextLength: 32, vocabSize: tok.vocabSize, seed: 0 });
    const file = path.join(os.tmpdir(), `whetstone-short-${process.pid}.safetensors`);
    await saveSamplerCheckpoint(file, model, tok);
    model.dispose();
    const short = await teamCheckpoint(team.teamId, fs.readFileSync(file));
    fs.rmSync(file);
    expect(await open(short)).toMatchObject({ ok: false, code: 'BAD_REQUEST', message: expect.stringMatching(/context is 32 tokens and gomoku's first prompt takes \d+: play a checkpoint with a longer context/) });
  });
});
