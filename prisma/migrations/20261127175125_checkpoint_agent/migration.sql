-- DropIndex
DROP INDEX "Checkpoint_jobId_attemptId_kind_step_key";

-- AlterTable
ALTER TABLE "Checkpoint" ADD COLUMN     "agent" TEXT NOT NULL DEFAULT '';

-- CreateIndex
CREATE UNIQUE INDEX "Checkpoint_jobId_attemptId_kind_step_agent_key" ON "Checkpoint"("jobId", "attemptId", "kind", "step", "agent");
