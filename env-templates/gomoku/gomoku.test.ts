import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Rng } from '../../sdk/environment/rng';
import { BLACK, WHITE, newBoard, parseMove, place, renderBoard, renderCompact, symmetries } from './board';
import { expertMove, scriptedMove } from './bots';
import { loadTemplate } from '../load-template';
import { openInSandbox, playWith } from '../test-support/template-harness';
import { type SandboxEnvironment } from '../../gpu-worker/runtime/sandbox/sandbox-environment';
import { dryRun } from '../../gpu-worker/runtime/dry-run';

const template = loadTemplate('gomoku');
/** The SDK's Rng under the type the template sees ('whetstone'): the same class, declared twice. */
const rng = (seed: number) => new Rng(seed) as unknown as Parameters<typeof scriptedMove>[2];

describe('gomoku rules', () => {
  const line = (cells: [number, number][], winLength = 5, size = 9) => {
    const board = newBoard(size, winLength);
    return cells.map(([r, c]) => place(board, r, c, BLACK));
  };

  test.each([
    ['across', [[4, 0], [4, 1], [4, 2], [4, 3], [4, 4]]],
    ['down', [[0, 8], [1, 8], [2, 8], [3, 8], [4, 8]]],
    ['diagonal', [[0, 0], [1, 1], [2, 2], [3, 3], [4, 4]]],
    ['anti-diagonal', [[8, 0], [7, 1], [6, 2], [5, 3], [4, 4]]],
    ['filled from the middle', [[4, 0], [4, 1], [4, 3], [4, 4], [4, 2]]],
  ] as [string, [number, number][]][])('five %s wins on the last stone only', (_name, cells) => {
    expect(line(cells)).toEqual([false, false, false, false, true]);
  });

  test('an overline wins; four does not; the opponent breaks a line', () => {
    expect(line([[0, 0], [0, 1], [0, 2], [0, 4], [0, 5], [0, 3]])).toEqual([false, false, false, false, false, true]);
    const board = newBoard(9, 5);
    for (const c of [0, 1, 2, 3]) place(board, 0, c, BLACK);
    place(board, 0, 4, WHITE);
    expect(place(board, 0, 5, BLACK)).toBe(false);
  });

  test('rendering and move syntax', () => {
    const board = newBoard(3, 3);
    place(board, 0, 0, BLACK);
    place(board, 1, 2, WHITE);
    expect(renderBoard(board)).toBe('  1 2 3\n1 X . .\n2 . . O\n3 . . .');
    expect(renderBoard(newBoard(10, 5)).split('\n')[0]).toBe('    1  2  3  4  5  6  7  8  9 10');
    expect(parseMove('I play <move> 3, 4 </move>')).toEqual({ row: 2, col: 3 });
    expect(parseMove('3,4')).toEqual({ problem: 'no <move>row,col</move> found' });
  });

  test('the scripted bot wins when it can and blocks when it must', () => {
    const board = newBoard(9, 5);
    for (const c of [1, 2, 3, 4]) place(board, 2, c, WHITE); // white threatens 2,0 or 2,5
    for (const c of [1, 2, 3, 4]) place(board, 6, c, BLACK); // black threatens too
    const win = scriptedMove(board, BLACK, rng(1), 0);
    expect(win.row).toBe(6);
    expect([0, 5]).toContain(win.col);
    const quiet = newBoard(9, 5);
    for (const c of [1, 2, 3, 4]) place(quiet, 2, c, WHITE);
    const block = scriptedMove(quiet, BLACK, rng(1), 0);
    expect(block.row).toBe(2);
    expect([0, 5]).toContain(block.col);
    expect(scriptedMove(newBoard(9, 5), BLACK, rng(1), 0)).toEqual({ row: 4, col: 4 }); // centre bias
  });

  test('the expert wins when it can, blocks a four, and blocks an open three before it grows', () => {
    const board = newBoard(9, 5);
    for (const c of [1, 2, 3, 4]) place(board, 2, c, WHITE);
    for (const c of [1, 2, 3, 4]) place(board, 6, c, BLACK);
    const win = expertMove(board, BLACK, rng(1));
    expect(win.row).toBe(6);
    expect([0, 5]).toContain(win.col);
    const four = newBoard(9, 5);
    for (const c of [1, 2, 3, 4]) place(four, 2, c, WHITE);
    place(four, 7, 7, BLACK);
    const block = expertMove(four, BLACK, rng(1));
    expect(block.row).toBe(2);
    expect([0, 5]).toContain(block.col);
    // White has an open three on row 5 (columns 4-6); black, with no line of its own, closes an end.
    const three = newBoard(9, 5);
    for (const c of [3, 4, 5]) place(three, 4, c, WHITE);
    place(three, 0, 0, BLACK);
    const closed = expertMove(three, BLACK, rng(2));
    expect(closed.row).toBe(4);
    expect([2, 6]).toContain(closed.col);
  });

  test('compact rendering: one line per row, its number then its cells', () => {
    const board = newBoard(3, 3);
    place(board, 0, 0, BLACK);
    place(board, 1, 2, WHITE);
    expect(renderCompact(board)).toBe('1X..\n2..O\n3...');
    expect(renderCompact(newBoard(10, 5)).split('\n').slice(8)).toEqual([' 9..........', '10..........']);
  });
});

describe('gomoku template in the sandbox', () => {
  let env: SandboxEnvironment;
  beforeAll(async () => {
    env = await openInSandbox(template);
  });
  afterAll(() => env.dispose());

  test('two agents, latest-observation context, three bots', () => {
    expect(env.description).toMatchObject({ kind: 'multi-agent', agents: ['black', 'white'], context: 'latest', bots: ['scripted', 'expert', 'random'] });
  });

  test('a game is a zero-sum match record: moves, players, raw text, result', async () => {
    const t = await playWith(env, { black: 'scripted', white: 'random' }, { seed: 4 });
    expect(t.endReason).toBe('terminated');
    expect(t.totalRewards.black + t.totalRewards.white).toBe(0);
    expect(t.turns[0]).toMatchObject({ agent: 'black', action: expect.stringMatching(/^<move>\d,\d<\/move>$/), info: { player: 'black', moveNumber: 1 } });
    expect(t.turns[1].agent).toBe('white');
    // The default observation is compact: the reader's stone and the last move, then the rows.
    expect(t.turns[0].observation).toBe(`X -,-\n${renderCompact(newBoard(9, 5))}`);
    const { row, col } = parseMove(t.turns[0].action) as { row: number; col: number };
    expect(t.turns[1].observation.split('\n')[0]).toBe(`O ${row + 1},${col + 1}`);
    expect(t.turns[1].observation.split('\n')[row + 1][col + 1]).toBe('X');
    expect(t.turns.every((turn) => turn.observation.length === t.turns[1].observation.length)).toBe(true);
    expect(['black', 'white', 'draw']).toContain(t.finalInfo.result);
  });

  test('each turn offers the empty cells as its legal actions', async () => {
    const reset = await env.reset({ episodeId: 'legal', seed: 1, taskSeed: 1 });
    expect(reset.turn.actions).toHaveLength(81);
    expect(reset.turn.actions).toContain('<move>5,5</move>');
    const step = await env.step({ episodeId: 'legal', action: '<move>5,5</move>' });
    expect(step.next?.actions).toHaveLength(80);
    expect(step.next?.actions).not.toContain('<move>5,5</move>');
    await env.close('legal');
  });

  test('the expert bot beats the scripted one', async () => {
    let wins = 0;
    const games = 16;
    for (let seed = 0; seed < games; seed++) {
      const expert = seed % 2 === 0 ? 'black' : 'white';
      const t = await playWith(env, { [expert]: 'expert', [expert === 'black' ? 'white' : 'black']: 'scripted' }, { seed });
      if (t.finalInfo.result === expert) wins++;
    }
    expect(wins).toBeGreaterThanOrEqual(12);
  });

  test('the scripted bot beats the random one', async () => {
    let wins = 0;
    const games = 16;
    for (let seed = 0; seed < games; seed++) {
      const t = await playWith(env, { black: 'scripted', white: 'random' }, { seed });
      expect(t.totalRewards.black + t.totalRewards.white).toBe(0);
      if (t.finalInfo.result === 'black') wins++;
    }
    expect(wins).toBeGreaterThanOrEqual(12);
  });

  test.each([
    ['no move', 'I resign', /no <move>row,col<\/move> found/],
    ['off the board', '<move>10,1</move>', /10,1 is off the board/],
  ])('an invalid move (%s) forfeits', async (_name, text, reason) => {
    const t = await playWith(env, { black: [text], white: 'random' });
    expect(t.totalRewards).toEqual({ black: -1, white: 1 });
    expect(t.finalInfo).toMatchObject({ result: 'white', reason: expect.stringMatching(reason) });
  });

  test('playing on a taken cell forfeits', async () => {
    const t = await playWith(env, { black: ['<move>5,5</move>'], white: ['<move>5,5</move>'] });
    expect(t.totalRewards).toEqual({ black: 1, white: -1 });
    expect(t.finalInfo.reason).toMatch(/5,5 is taken/);
  });
});

describe('configurable size and win length', () => {
  test('5 × 5, four in a row', async () => {
    const env = await openInSandbox(template, { 'small.ts': "import { createGomoku } from './env';\nexport default createGomoku({ size: 5, winLength: 4 });\n" }, 'small.ts');
    const t = await playWith(env, {
      black: ['<move>1,1</move>', '<move>1,2</move>', '<move>1,3</move>', '<move>1,4</move>'],
      white: ['<move>5,1</move>', '<move>5,2</move>', '<move>5,3</move>'],
    });
    expect(t.turns[0].observation.split('\n')[1]).toBe('1.....');
    expect(t.finalInfo).toMatchObject({ result: 'black', reason: '4 in a row' });
    expect(t.totalRewards).toEqual({ black: 1, white: -1 });
    await env.dispose();
  });

  test('brief instructions: one short line with the size, the win length and the move syntax', async () => {
    const env = await openInSandbox(template, { 'brief.ts': "import { createGomoku } from './env';\nexport default createGomoku({ size: 5, winLength: 3, instructions: 'brief', observation: 'grid' });\n" }, 'brief.ts');
    const t = await playWith(env, { black: 'scripted', white: 'random' }, { seed: 3 });
    expect(t.systemPrompts).toEqual({ black: 'Gomoku 5x5, 3 in a row wins. Reply <move>row,col</move>.', white: 'Gomoku 5x5, 3 in a row wins. Reply <move>row,col</move>.' });
    // The grid observation says which side the agent plays and the opponent's last move in words.
    expect(t.turns[0].observation.split('\n')[0]).toBe('  1 2 3 4 5');
    expect(t.turns[1].observation).toMatch(/black played \d,\d\.\nYou are white \(O\)\. Your move:$/);
    await env.dispose();
    const fullEnv = await openInSandbox(template, { 'full.ts': "import { createGomoku } from './env';\nexport default createGomoku({ instructions: 'full' });\n" }, 'full.ts');
    const full = await playWith(fullEnv, { black: 'scripted', white: 'random' }, { seed: 3, maxTurns: 1 });
    expect(full.systemPrompts.black).toMatch(/^You play Gomoku on a 9x9 board as black \(X\)\./);
    await fullEnv.dispose();
  });

  test('a bad configuration is a load error at its line', async () => {
    const e = await openInSandbox(template, { 'bad.ts': "import { createGomoku } from './env';\n\nexport default createGomoku({ size: 5, winLength: 7 });\n" }, 'bad.ts').catch((x: unknown) => x);
    expect(e).toMatchObject({ kind: 'load', location: { file: 'board.ts' } });
    expect((e as Error).message).toMatch(/win length must be 3..5, got 7/);
  });

  test('dry run with the bots', async () => {
    const report = await dryRun({ source: template.source, manifest: template.manifest, episodes: 8 });
    expect(report.ok).toBe(true);
    expect(report.warnings).toEqual([]);
    expect(report.rewards.black.mean + report.rewards.white.mean).toBeCloseTo(0);
  });
});

describe('symmetries (warm-start augmentation)', () => {
  /** A 0-based move through the k-th of the 8 symmetries, as symmetries() in board.ts orders them. */
  const maps = symmetries(9);
  const moved = (action: string, k: number) => {
    const { row, col } = parseMove(action) as { row: number; col: number };
    const [r, c] = maps[k](row, col);
    return `<move>${r + 1},${c + 1}</move>`;
  };

  test.each([
    ['compact', undefined],
    ['grid', "import { createGomoku } from './env';\nexport default createGomoku({ observation: 'grid' });\n"],
  ])('%s: each symmetric turn is what the environment shows when the game is played rotated or reflected', async (_layout, variant) => {
    const env = await openInSandbox(template, variant ? { 'variant.ts': variant } : {}, variant ? 'variant.ts' : undefined);
    try {
      expect(env.description.symmetries).toBe(true);
      const game = await playWith(env, { black: 'expert', white: 'scripted' }, { seed: 3 });
      expect(game.turns.length).toBeGreaterThan(8);
      const seen = await env.symmetries({ turns: game.turns.map((t) => ({ agent: t.agent, observation: t.observation, action: t.action })) });
      expect(seen.map((s) => s.length)).toEqual(game.turns.map(() => 8));
      for (let k = 0; k < 8; k++) {
        // The same game with every move moved by symmetry k, played for real.
        const actions = game.turns.map((t) => moved(t.action, k));
        const replay = await playWith(env, { black: actions.filter((_, i) => i % 2 === 0), white: actions.filter((_, i) => i % 2 === 1) });
        expect(replay.turns.map((t) => t.observation)).toEqual(seen.map((s) => s[k].observation));
        expect(replay.turns.map((t) => t.action)).toEqual(seen.map((s) => s[k].action));
        expect(replay.finalInfo.result).toBe(game.finalInfo.result);
      }
      // The first is the turn itself; the eight boards are different (the game is not symmetric).
      expect(seen.map((s) => s[0])).toEqual(game.turns.map((t) => ({ observation: t.observation, action: t.action })));
      expect(new Set(seen.at(-1)!.map((s) => s.observation)).size).toBe(8);
    } finally {
      await env.dispose();
    }
  });

  test('an action that is not a move cannot be transformed: the error says so', async () => {
    const env = await openInSandbox(template);
    try {
      await expect(env.symmetries({ turns: [{ agent: 'black', observation: `X -,-\n${renderCompact(newBoard(9, 5))}`, action: 'I resign' }] })).rejects.toThrow(/the action "I resign" is not a move/);
    } finally {
      await env.dispose();
    }
  });
});
