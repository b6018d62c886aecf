/* global module */
// The architecture rules that `npm run lint` checks (dependency-cruiser). The layers are those of
// DESIGN.md: sdk/ is the floor; server/ (the control plane) and gpu-worker/ (the worker) both stand
// on it and never on each other; app/ (the browser) knows the server only through tRPC's types.
// test-support/dependency-rules/ shows that these rules fail on a circle and on a worker that
// imports the server.
//
// "Production code" below is everything but tests (*.test.ts), test support (test-support/
// folders), benchmarks, scripts and e2e: tests may cross the layers, since they test the whole.

/** Tests and the folders of their helpers. */
const TESTS = '(^|/)test-support/|\\.test\\.tsx?$|^e2e/';
/** What only developers run: benchmarks, scripts, and the engine's measuring tools. */
const TOOLS = '^(bench|scripts)/|^gpu-worker/engine/tools/';
const NOT_PRODUCTION = `${TESTS}|${TOOLS}`;

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment:
        'An import circle makes the modules in it one unit: none can be loaded, tested or understood ' +
        'alone, and the order of their top-level code decides what is undefined at start.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'worker-never-imports-server',
      comment:
        'The worker runs on GPU machines that reach the server only through the worker protocol ' +
        '(sdk/worker-protocol.ts); importing server code would ship the control plane and its ' +
        'database client to them. Shared contracts belong in sdk/.',
      severity: 'error',
      from: { path: '^gpu-worker/', pathNot: NOT_PRODUCTION },
      to: { path: '^server/' },
    },
    {
      name: 'server-never-imports-worker',
      comment:
        'The control plane must not depend on the worker: shared contracts belong in sdk/. (Saving an ' +
        "environment dry-runs it, and the play console plays it, in processes the server starts by path, " +
        'not by import (server/environments/fork-runtime.ts): gpu-worker/runtime/dry-run-process.ts and ' +
        "play-process.ts, which speak sdk/dry-run-report.ts's and sdk/play.ts's messages.)",
      severity: 'error',
      from: { path: '^server/', pathNot: NOT_PRODUCTION },
      to: { path: '^gpu-worker/' },
    },
    {
      name: 'sdk-is-the-floor',
      comment:
        'sdk/ is the public contract that the server, the worker, the browser and users build on; ' +
        'what it imports, every one of them imports. It stands on nothing of theirs.',
      severity: 'error',
      from: { path: '^sdk/', pathNot: `${NOT_PRODUCTION}|^sdk/cli/client\\.ts$` },
      to: { path: '^(server|gpu-worker|app)/' },
    },
    {
      name: 'sdk-client-imports-only-the-router',
      comment:
        "The CLI's tRPC client is typed by the server's router, as the browser is (tRPC's contract " +
        'is that type): a type-only import of server/api/root.ts, erased at build, and nothing else.',
      severity: 'error',
      from: { path: '^sdk/cli/client\\.ts$' },
      to: { path: '^(server|gpu-worker|app)/', pathNot: '^server/api/root\\.ts$' },
    },
    {
      name: 'sdk-client-imports-the-router-as-a-type',
      comment: 'The same import, type-only.',
      severity: 'error',
      from: { path: '^sdk/cli/client\\.ts$' },
      to: { path: '^server/api/root\\.ts$', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'environment-api-stands-alone',
      comment:
        "sdk/environment/ is bundled into user environments that run in QuickJS, where there is no " +
        'Node and no npm package: it imports only its own files.',
      severity: 'error',
      from: { path: '^sdk/environment/', pathNot: NOT_PRODUCTION },
      to: { pathNot: '^sdk/environment/' },
    },
    {
      name: 'browser-sees-server-types-only',
      comment:
        "app/ runs in the browser: it may name the server's types (tRPC's AppRouter), which are " +
        'erased at build, but never import server code, which would ship the database client and ' +
        'secrets handling to the page.',
      severity: 'error',
      from: { path: '^app/' },
      to: { path: '^(server|gpu-worker)/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'production-never-imports-tests',
      comment:
        'Test support (fixtures, fake servers, test databases) must not ship or run in production; ' +
        'it lives in test-support/ folders and in *.test.ts files, which only tests and tools import.',
      severity: 'error',
      from: { pathNot: NOT_PRODUCTION },
      to: { path: TESTS },
    },
    {
      name: 'env-templates-import-only-the-sdk',
      comment:
        'The built-in environments are what users copy: their code imports only the sdk ' +
        "(`whetstone` inside an environment, or sdk/ from the templates' Node-side loader and " +
        'dataset generators), never the server or the runtime. Their tests may use the runtime.',
      severity: 'error',
      from: { path: '^env-templates/', pathNot: NOT_PRODUCTION },
      to: { path: '^(server|gpu-worker|app|bench|scripts)/' },
    },
    {
      name: 'environment-code-runs-in-quickjs',
      comment:
        "A template's environment code is compiled and run in QuickJS like a user's: it imports " +
        'only `whetstone` and files of its own folder (generate-dataset.ts is a Node script beside it).',
      severity: 'error',
      from: { path: '^env-templates/([^/]+)/', pathNot: `${NOT_PRODUCTION}|/generate-dataset\\.ts$` },
      to: { pathNot: ['^env-templates/$1/', '^whetstone$'] },
    },
    {
      name: 'routers-never-import-routers',
      comment:
        "create-t3-app's habit: a router is a thin entry per domain, merged in root.ts. Shared work " +
        'is a plain function (e.g. server/jobs/), so a procedure never runs another one through a caller.',
      severity: 'error',
      from: { path: '^server/api/routers/' },
      to: { path: '^server/api/routers/' },
    },
    {
      name: 'scheduler-never-imports-worker-protocol',
      comment:
        "server/workers/ (the worker protocol's HTTP and socket.io sides) calls into the scheduler " +
        '(transitions, notify, assignments); the scheduler never reaches back, which kept the two ' +
        'folders in a circle before.',
      severity: 'error',
      from: { path: '^server/scheduler/', pathNot: NOT_PRODUCTION },
      to: { path: '^server/workers/' },
    },
  ],
  options: {
    // Type-only imports count: a circle through types is still a circle for readers and tools.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    // Generated Prisma client, and the fixture trees that the rules' own test cruises on purpose.
    exclude: { path: '^(node_modules|\\.next|server/db/generated)/|/fixtures/' },
    enhancedResolveOptions: {
      extensions: ['.ts', '.tsx', '.mts', '.js', '.mjs', '.json'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
