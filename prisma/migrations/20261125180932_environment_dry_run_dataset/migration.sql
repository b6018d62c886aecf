-- AlterTable
ALTER TABLE "EnvironmentVersion" ADD COLUMN     "dryRunDatasetVersionId" TEXT;

-- AddForeignKey
ALTER TABLE "EnvironmentVersion" ADD CONSTRAINT "EnvironmentVersion_dryRunDatasetVersionId_fkey" FOREIGN KEY ("dryRunDatasetVersionId") REFERENCES "DatasetVersion"("id") ON DELETE SET NULL ON UPDATE CASCADE;
