/**
 * The checkpoints a play request names (opponents, or autoplay's policy): the team's own (else
 * NOT_FOUND, as everywhere), small enough for a play process (PLAY_MAX_PARAMETERS, judged by their
 * bytes here and by their count where they load), with their bytes for the play process, which
 * loads each once and plays it on its CPU (gpu-worker/runtime/checkpoint-player.ts).
 */
import { PLAY_MAX_PARAMETERS, type PlayCheckpoint, type PlayOpponent, playCheckpointTooLarge } from '../../sdk/play';
import type { BlobStore } from '../blobs/store';
import type { Db } from '../db/client';
import { PlayRefused } from './play-sessions';

/** Float32 weights; a training checkpoint also holds the optimiser's two moments per weight. */
const BYTES_PER_PARAMETER = { SAMPLER: 4, TRAINING: 12 } as const;

export async function playCheckpoints(db: Db, blobs: BlobStore, teamId: string, players: PlayOpponent[]): Promise<Record<string, PlayCheckpoint>> {
  const ids = [...new Set(players.flatMap((p) => ('checkpointId' in p ? [p.checkpointId] : [])))];
  const out: Record<string, PlayCheckpoint> = {};
  for (const id of ids) {
    const row = await db.checkpoint.findFirst({ where: { id, teamId }, select: { storageKey: true, bytes: true, kind: true, isAdapter: true } });
    if (!row) throw new PlayRefused('NOT_FOUND', 'No such checkpoint in this team');
    if (row.isAdapter) throw new PlayRefused('BAD_REQUEST', `checkpoint ${id} holds LoRA adapters only: play a sampler checkpoint with the adapters merged`);
    const parameters = Number(row.bytes) / BYTES_PER_PARAMETER[row.kind];
    if (parameters > PLAY_MAX_PARAMETERS * 1.05) throw new PlayRefused('BAD_REQUEST', playCheckpointTooLarge(id, parameters));
    out[id] = { storageKey: row.storageKey, bytes: await blobs.get(row.storageKey) };
  }
  return out;
}
