-- AlterTable
ALTER TABLE "JobAttempt" ADD COLUMN     "preemptRequestedAt" TIMESTAMP(3);
