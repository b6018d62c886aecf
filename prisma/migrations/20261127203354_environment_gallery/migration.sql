-- AlterTable
ALTER TABLE "EnvironmentVersion" ADD COLUMN     "publishedAt" TIMESTAMP(3);

-- CreateIndex
CREATE INDEX "EnvironmentVersion_publishedAt_idx" ON "EnvironmentVersion"("publishedAt");

-- CreateIndex
CREATE INDEX "EnvironmentVersion_contentHash_idx" ON "EnvironmentVersion"("contentHash");
