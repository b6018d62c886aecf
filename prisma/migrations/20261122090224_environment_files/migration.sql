-- AlterTable
ALTER TABLE "EnvironmentVersion" DROP COLUMN "code",
ADD COLUMN     "entry" TEXT NOT NULL,
ADD COLUMN     "files" JSONB NOT NULL;
