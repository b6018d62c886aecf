-- CreateTable
CREATE TABLE "PretrainedModel" (
    "id" TEXT NOT NULL,
    "teamId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "family" TEXT NOT NULL,
    "card" JSONB NOT NULL,
    "files" JSONB NOT NULL,
    "contentHash" TEXT NOT NULL,
    "bytes" BIGINT NOT NULL,
    "createdById" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "PretrainedModel_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "PretrainedModel_teamId_contentHash_idx" ON "PretrainedModel"("teamId", "contentHash");

-- CreateIndex
CREATE UNIQUE INDEX "PretrainedModel_teamId_name_key" ON "PretrainedModel"("teamId", "name");

-- AddForeignKey
ALTER TABLE "PretrainedModel" ADD CONSTRAINT "PretrainedModel_teamId_fkey" FOREIGN KEY ("teamId") REFERENCES "Team"("id") ON DELETE CASCADE ON UPDATE CASCADE;
