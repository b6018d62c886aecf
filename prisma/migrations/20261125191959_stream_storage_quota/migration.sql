-- AlterTable
ALTER TABLE "TeamQuota" ADD COLUMN     "streamStorageBytes" BIGINT NOT NULL DEFAULT 1073741824;

-- CreateTable
CREATE TABLE "TeamStreamUsage" (
    "teamId" TEXT NOT NULL,
    "bytes" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "TeamStreamUsage_pkey" PRIMARY KEY ("teamId")
);

-- CreateTable
CREATE TABLE "JobStreamUsage" (
    "jobId" TEXT NOT NULL,
    "bytes" BIGINT NOT NULL DEFAULT 0,
    "droppedAt" TIMESTAMP(3),

    CONSTRAINT "JobStreamUsage_pkey" PRIMARY KEY ("jobId")
);

-- AddForeignKey
ALTER TABLE "TeamStreamUsage" ADD CONSTRAINT "TeamStreamUsage_teamId_fkey" FOREIGN KEY ("teamId") REFERENCES "Team"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "JobStreamUsage" ADD CONSTRAINT "JobStreamUsage_jobId_fkey" FOREIGN KEY ("jobId") REFERENCES "Job"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Stream data stored before the quota, counted as server/streams/stream-quota.ts counts a batch
-- (texts and JSON in UTF-8 bytes, 64 bytes a row), so that every team starts from what it keeps.
INSERT INTO "JobStreamUsage" ("jobId", "bytes")
SELECT "jobId", sum(b)::bigint FROM (
    SELECT "jobId", octet_length("message") + octet_length("level") + 64 AS b FROM "LogLine"
    UNION ALL SELECT "jobId", octet_length("key") + 64 FROM "MetricPoint"
    UNION ALL SELECT "jobId", octet_length("segments"::text) + octet_length("info"::text) + octet_length("turnRewards"::text) + coalesce(octet_length("endReason"), 0) + 64 FROM "RolloutSample"
    UNION ALL SELECT "jobId", octet_length("agents"::text) + octet_length("moves"::text) + octet_length("result"::text) + 64 FROM "Match" WHERE "jobId" IS NOT NULL
) AS stored GROUP BY "jobId";

INSERT INTO "TeamStreamUsage" ("teamId", "bytes")
SELECT j."teamId", sum(u."bytes")::bigint FROM "JobStreamUsage" u JOIN "Job" j ON j."id" = u."jobId" GROUP BY j."teamId";
