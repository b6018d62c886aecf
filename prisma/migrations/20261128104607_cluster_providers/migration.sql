-- CreateEnum
CREATE TYPE "ProviderKind" AS ENUM ('SLURM');

-- CreateEnum
CREATE TYPE "LaunchState" AS ENUM ('ORDERED', 'SUBMITTING', 'PENDING', 'RUNNING', 'ENDED', 'FAILED', 'CANCELLED');

-- AlterTable
ALTER TABLE "Job" ADD COLUMN     "waitingCode" TEXT;

-- CreateTable
CREATE TABLE "ClusterProvider" (
    "id" TEXT NOT NULL,
    "teamId" TEXT,
    "name" TEXT NOT NULL,
    "kind" "ProviderKind" NOT NULL,
    "settings" JSONB NOT NULL,
    "tokenHash" TEXT NOT NULL,
    "prefix" TEXT NOT NULL,
    "createdById" TEXT NOT NULL,
    "lastSeenAt" TIMESTAMP(3),
    "lastError" TEXT,
    "failures" INTEGER NOT NULL DEFAULT 0,
    "backoffUntil" TIMESTAMP(3),
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "ClusterProvider_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ClusterLaunch" (
    "id" TEXT NOT NULL,
    "providerId" TEXT NOT NULL,
    "state" "LaunchState" NOT NULL DEFAULT 'ORDERED',
    "externalId" TEXT,
    "reason" TEXT,
    "workerTokenId" TEXT NOT NULL,
    "runningAt" TIMESTAMP(3),
    "endedAt" TIMESTAMP(3),
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "ClusterLaunch_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "ClusterProvider_tokenHash_key" ON "ClusterProvider"("tokenHash");

-- CreateIndex
CREATE INDEX "ClusterProvider_teamId_idx" ON "ClusterProvider"("teamId");

-- CreateIndex
CREATE UNIQUE INDEX "ClusterLaunch_workerTokenId_key" ON "ClusterLaunch"("workerTokenId");

-- CreateIndex
CREATE INDEX "ClusterLaunch_providerId_state_idx" ON "ClusterLaunch"("providerId", "state");

-- AddForeignKey
ALTER TABLE "ClusterProvider" ADD CONSTRAINT "ClusterProvider_teamId_fkey" FOREIGN KEY ("teamId") REFERENCES "Team"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ClusterProvider" ADD CONSTRAINT "ClusterProvider_createdById_fkey" FOREIGN KEY ("createdById") REFERENCES "User"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ClusterLaunch" ADD CONSTRAINT "ClusterLaunch_providerId_fkey" FOREIGN KEY ("providerId") REFERENCES "ClusterProvider"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ClusterLaunch" ADD CONSTRAINT "ClusterLaunch_workerTokenId_fkey" FOREIGN KEY ("workerTokenId") REFERENCES "WorkerToken"("id") ON DELETE CASCADE ON UPDATE CASCADE;
