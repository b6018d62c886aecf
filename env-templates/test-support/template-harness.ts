/** Test helpers: open a template in the sandbox, as the worker does, and play it with its bots. */
import { SandboxEnvironment } from '../../gpu-worker/runtime/sandbox/sandbox-environment';
import { playEpisode } from '../../gpu-worker/runtime/play-episode';
import { type Json } from '../../sdk/environment/schema';
import { type LoadedTemplate } from '../load-template';
import type { Transcript } from '../../sdk/dry-run-report';

export async function openInSandbox(template: LoadedTemplate, extraFiles: Record<string, string> = {}, entry?: string): Promise<SandboxEnvironment> {
  const loaded = await SandboxEnvironment.load({ files: { ...template.source.files, ...extraFiles }, entry: entry ?? template.source.entry });
  if (!loaded.ok) throw new Error(`template does not compile: ${JSON.stringify(loaded.errors)}`);
  return loaded.env;
}

let counter = 0;

/** Plays one episode with a bot (or a fixed list of actions) per agent. */
export function playWith(
  env: SandboxEnvironment,
  players: Record<string, string | string[]>,
  options: { seed?: number; taskSeed?: number; row?: Json; maxTurns?: number } = {},
): Promise<Transcript> {
  const scripts = Object.fromEntries(Object.entries(players).map(([agent, p]) => [agent, Array.isArray(p) ? [...p] : p]));
  return playEpisode(env, {
    episodeId: `t${counter++}`,
    seed: options.seed ?? 1,
    taskSeed: options.taskSeed ?? options.seed ?? 1,
    row: options.row,
    maxTurns: options.maxTurns ?? 100,
    actor: (agent, _observation, episodeId) => {
      const player = scripts[agent];
      if (Array.isArray(player)) return player.shift() ?? '';
      return env.bot({ episodeId, bot: player });
    },
  });
}
