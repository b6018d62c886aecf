import { defineConfig } from 'vitest/config';

// Unit and integration tests sit beside the code as *.test.ts. Integration tests talk to a real
// PostgreSQL (DATABASE_URL, or the embedded one started in server/test-support/test-database.ts).
export default defineConfig({
  test: {
    include: ['**/*.test.ts'],
    exclude: ['node_modules/**', 'e2e/**', '.next/**', '.whetstone/**'],
    pool: 'forks',
    globalSetup: ['server/test-support/vitest-global-setup.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});
