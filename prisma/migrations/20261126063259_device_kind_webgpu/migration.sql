-- AlterEnum
ALTER TYPE "DeviceKind" ADD VALUE 'WEBGPU';
