import { defineConfig } from 'prisma/config';

// Prisma 7 does not read .env and this file must not throw when DATABASE_URL is unset (the
// embedded PostgreSQL is the default; `prisma generate` needs no database).
export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
  datasource: { url: process.env.DATABASE_URL ?? 'postgresql://localhost:5432/whetstone' },
});
