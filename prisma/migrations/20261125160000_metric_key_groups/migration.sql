-- Metric keys become `group/name` (sdk/live.ts, METRICS): stored runs are renamed here, once, rather
-- than mapped by every reader (runs.series, runs.metricKeys, runs.since, checkpoints' metrics, the
-- CLI), so each metric has one name everywhere and the (job, key, step) index serves it as is.
-- The schema does not change.

-- The new name of an old key, or NULL if the key keeps its name. `winRate` meant the learning seats'
-- share of wins in training and the evaluated policy's in an evaluation. Parts that name an agent
-- follow sdk/live.ts's agentRewardKey and seatWinRateKey.
CREATE FUNCTION pg_temp.whetstone_metric_key(old text, kind text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE
    WHEN old = 'winRate' THEN CASE WHEN kind = 'EVAL' THEN 'eval/win_rate' ELSE 'episode/win_rate' END
    WHEN old LIKE 'reward.%' THEN
      CASE WHEN agent IN ('mean', 'batch_mean', 'batch_std', 'batch_min', 'batch_max') THEN left('reward/agent_' || agent, 100) ELSE left('reward/' || agent, 100) END
    WHEN old LIKE 'winRate.%' THEN left('eval/win_rate/' || seat, 100)
    ELSE (SELECT n FROM (VALUES
      ('reward', 'reward/mean'), ('rewardMean', 'reward/batch_mean'), ('rewardStd', 'reward/batch_std'),
      ('rewardMin', 'reward/batch_min'), ('rewardMax', 'reward/batch_max'),
      ('episodes', 'episode/count'), ('episodeErrors', 'episode/errors'), ('turns', 'episode/turns'),
      ('responseTokens', 'episode/response_tokens'),
      ('loss', 'loss/total'), ('policyLoss', 'loss/policy'), ('valueLoss', 'loss/value'),
      ('kl', 'policy/kl'), ('entropy', 'policy/entropy'), ('clipFraction', 'policy/clip_frac'),
      ('gradNorm', 'optim/grad_norm'), ('learningRate', 'optim/lr'), ('trainerStep', 'optim/step'),
      ('updates', 'optim/updates'), ('tokens', 'optim/tokens'),
      ('tokensPerSecond', 'perf/tokens_per_s'), ('stepSeconds', 'perf/step_s'), ('stepTimeMs', 'perf/update_ms'),
      ('epoch', 'data/epoch'),
      ('score', 'eval/score'), ('games', 'eval/games'), ('errors', 'eval/errors'), ('meanReturn', 'eval/mean_return'),
      ('wins', 'eval/wins'), ('losses', 'eval/losses'), ('draws', 'eval/draws')
    ) AS renames(o, n) WHERE o = old)
  END
  FROM (SELECT coalesce(nullif(regexp_replace(substr(old, 8), '[[:space:]/]+', '_', 'g'), ''), '_') AS agent,
               coalesce(nullif(regexp_replace(substr(old, 9), '[[:space:]/]+', '_', 'g'), ''), '_') AS seat) AS parts
$$;

-- Every (job, old key) that changes name.
CREATE TEMPORARY TABLE whetstone_renamed AS
  SELECT k."jobId", k.key AS old, pg_temp.whetstone_metric_key(k.key, j.kind::text) AS new
    FROM (SELECT DISTINCT "jobId", key FROM "MetricPoint") k JOIN "Job" j ON j.id = k."jobId"
   WHERE pg_temp.whetstone_metric_key(k.key, j.kind::text) IS NOT NULL;

-- A run that wrote both names for a step (a worker of the new version resuming an old run) keeps
-- the new name's value.
DELETE FROM "MetricPoint" p USING whetstone_renamed r
 WHERE p."jobId" = r."jobId" AND p.key = r.old
   AND EXISTS (SELECT 1 FROM "MetricPoint" n WHERE n."jobId" = p."jobId" AND n.key = r.new AND n.step = p.step);

UPDATE "MetricPoint" p SET key = r.new FROM whetstone_renamed r WHERE p."jobId" = r."jobId" AND p.key = r.old;

-- Rollups of renamed metrics are made again from their points, 256 steps a bucket
-- (server/streams/rollup.ts, rebuildRollups), since one name may now hold the points of two.
DELETE FROM "MetricRollup" m USING whetstone_renamed r WHERE m."jobId" = r."jobId" AND m.key IN (r.old, r.new);
INSERT INTO "MetricRollup" ("jobId", key, bucket, "firstStep", "lastStep", min, max, last, count)
SELECT p."jobId", p.key, p.step / 256, min(p.step), max(p.step), min(p.value), max(p.value),
       (array_agg(p.value ORDER BY p.step DESC))[1], count(*)::int
  FROM "MetricPoint" p JOIN (SELECT DISTINCT "jobId", new FROM whetstone_renamed) r ON p."jobId" = r."jobId" AND p.key = r.new
 GROUP BY p."jobId", p.key, p.step / 256;

-- Checkpoints keep the metrics of their step under the same names.
UPDATE "Checkpoint" c
   SET metrics = (SELECT jsonb_object_agg(coalesce(pg_temp.whetstone_metric_key(e.key, j.kind::text), e.key), e.value)
                    FROM jsonb_each(c.metrics) e)
  FROM "Job" j
 WHERE j.id = c."jobId" AND jsonb_typeof(c.metrics) = 'object'
   AND EXISTS (SELECT 1 FROM jsonb_object_keys(c.metrics) k WHERE pg_temp.whetstone_metric_key(k, j.kind::text) IS NOT NULL);

-- Dropped by hand: the migrator runs this in one transaction, but other runners may not.
DROP TABLE whetstone_renamed;
DROP FUNCTION pg_temp.whetstone_metric_key(text, text);
