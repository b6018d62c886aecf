-- AlterTable
ALTER TABLE "MetricPoint" ADD COLUMN     "seq" INTEGER NOT NULL DEFAULT 0;

-- AlterTable
ALTER TABLE "RolloutSample" ADD COLUMN     "seq" INTEGER NOT NULL DEFAULT 0;

-- CreateIndex
CREATE INDEX "MetricPoint_jobId_attempt_seq_idx" ON "MetricPoint"("jobId", "attempt", "seq");

-- CreateIndex
CREATE INDEX "RolloutSample_jobId_attempt_seq_idx" ON "RolloutSample"("jobId", "attempt", "seq");
