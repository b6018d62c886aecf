// The planner's thread (plan-thread.ts starts it by path): plans each round it is sent and posts
// the plan back. Plain data in and out: the round's input as loadRound read it.
import { parentPort } from 'node:worker_threads';
import { planRound } from './plan-round';
import type { PlanInput } from './types';
import type { PlanRequest, PlanResponse } from './plan-thread';

parentPort?.on('message', ({ id, input, gate }: PlanRequest & { input: PlanInput }) => {
  let response: PlanResponse;
  try {
    const { plan, read } = planRound(input);
    response = { id, plan, read: read.map((job) => job.id) };
  } catch (error) {
    response = { id, error: (error as Error).stack ?? String(error) };
  }
  // Tests hold the answer until they have seen the server answer meanwhile (plan-thread.test.ts).
  if (gate) Atomics.wait(gate, 0, 0);
  parentPort?.postMessage(response);
});
parentPort?.postMessage({ ready: true });
