-- AlterTable
ALTER TABLE "Checkpoint" ADD COLUMN     "name" TEXT;

-- CreateIndex
CREATE UNIQUE INDEX "Checkpoint_teamId_name_key" ON "Checkpoint"("teamId", "name");
