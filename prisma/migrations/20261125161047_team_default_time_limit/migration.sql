-- AlterTable
ALTER TABLE "TeamQuota" ADD COLUMN     "defaultTimeLimitSeconds" INTEGER NOT NULL DEFAULT 86400;
