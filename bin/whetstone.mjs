#!/usr/bin/env node
// `npx whetstone …` from the checkout: runs sdk/cli/main.ts through tsx's ESM loader.
import { register } from 'tsx/esm/api';

register();
const { runCli } = await import('../sdk/cli/main.ts');
await runCli();
