-- AlterTable
ALTER TABLE "User" ADD COLUMN     "isInstallationAdmin" BOOLEAN NOT NULL DEFAULT false;
