-- DropIndex
DROP INDEX "Checkpoint_storageKey_key";

-- CreateIndex
CREATE INDEX "Checkpoint_storageKey_idx" ON "Checkpoint"("storageKey");

-- CreateIndex
CREATE UNIQUE INDEX "Checkpoint_jobId_attemptId_kind_step_key" ON "Checkpoint"("jobId", "attemptId", "kind", "step");
