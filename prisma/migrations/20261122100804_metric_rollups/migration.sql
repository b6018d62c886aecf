-- CreateTable
CREATE TABLE "MetricRollup" (
    "jobId" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "bucket" INTEGER NOT NULL,
    "firstStep" INTEGER NOT NULL,
    "lastStep" INTEGER NOT NULL,
    "min" DOUBLE PRECISION NOT NULL,
    "max" DOUBLE PRECISION NOT NULL,
    "last" DOUBLE PRECISION NOT NULL,
    "count" INTEGER NOT NULL,

    CONSTRAINT "MetricRollup_pkey" PRIMARY KEY ("jobId","key","bucket")
);

-- AddForeignKey
ALTER TABLE "MetricRollup" ADD CONSTRAINT "MetricRollup_jobId_fkey" FOREIGN KEY ("jobId") REFERENCES "Job"("id") ON DELETE CASCADE ON UPDATE CASCADE;
