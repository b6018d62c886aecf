/**
 * Runs one assignment to its end, whatever its kind, and says how it ended. Never throws: a
 * failure is an outcome with a reason.
 */
import { type Assignment } from '../../sdk/worker-protocol';
import { runEval } from './eval';
import { runInference } from './inference';
import { runSft } from './sft';
import { type JobControl, type JobSink } from './sink';
import { failureReason } from './lifecycle';
import { runTrain } from './train';
import { type JobResult, type RunOptions } from './types';

export async function runJob(assignment: Assignment, sink: JobSink, control: JobControl, options: RunOptions = {}): Promise<JobResult> {
  try {
    switch (assignment.kind) {
      case 'TRAIN':
        return await runTrain(assignment, sink, control, options);
      case 'SFT':
        return await runSft(assignment, sink, control, options);
      case 'EVAL':
        return await runEval(assignment, sink, control);
      case 'INFERENCE':
        return await runInference(assignment, sink, control, options.inference);
      default:
        return { outcome: 'failed', reason: `unknown job kind "${String((assignment as { kind: unknown }).kind)}"` };
    }
  } catch (e) {
    return { outcome: 'failed', reason: failureReason(e) };
  }
}
