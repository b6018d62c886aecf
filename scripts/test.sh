#!/usr/bin/env bash
# npm test: lint, typecheck, unit and integration tests (real PostgreSQL: DATABASE_URL's server
# when set, else an embedded one), then the browser tests in Chromium. Ends with one line
# "N passed, N failed" that sums every runner.
set -euo pipefail
cd "$(dirname "$0")/.."

reports=".whetstone-cache/test-reports"
rm -rf "$reports" && mkdir -p "$reports"

echo "── lint"
npm run --silent lint
echo "── typecheck"
npm run --silent typecheck

echo "── unit and integration tests (vitest)"
vitest_status=0
npx vitest run --reporter=default --reporter=json --outputFile.json="$reports/vitest.json" || vitest_status=$?

# The engine again on wasm's own kernels: the path a worker takes when the native kernels cannot
# build or load (gpu-worker/engine/native.ts). WebGPU does not use them, so its tests are left out.
echo "── the engine's tests on the wasm kernels (WHETSTONE_NATIVE=0)"
WHETSTONE_NATIVE=0 npx vitest run gpu-worker/engine --exclude gpu-worker/engine/webgpu.test.ts \
  --reporter=default --reporter=json --outputFile.json="$reports/vitest-wasm-kernels.json" || vitest_status=$?

chromium="${CHROMIUM_PATH:-/usr/bin/chromium}"
e2e_status=0
if [ -x "$chromium" ]; then
  echo "── browser tests (Playwright, $chromium)"
  # Playwright resolves a relative report path from its config's folder: give it an absolute one.
  PLAYWRIGHT_JSON_OUTPUT_NAME="$PWD/$reports/playwright.json" \
    npx playwright test -c e2e/playwright.config.ts --reporter=list,json || e2e_status=$?
elif [ "${CI:-}" = "true" ]; then
  echo "No Chromium at $chromium, and CI needs the browser tests. Install it: apt-get install chromium (or set CHROMIUM_PATH)." >&2
  exit 1
else
  echo "── browser tests skipped: no Chromium at $chromium."
  echo "   Install one (sudo apt-get install chromium) or point CHROMIUM_PATH at it, then run npm test again."
fi

node scripts/test-summary.mjs "$reports"
[ "$vitest_status" -eq 0 ] && [ "$e2e_status" -eq 0 ]
