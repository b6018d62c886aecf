/** Dataset versions as a job reads them: JSONL from the blob store, one row a line. */
import { type Json } from '../../sdk/environment/schema';
import { type Assignment } from '../../sdk/worker-protocol';
import { blobKey } from './load-policy';
import { type JobSink } from './sink';
import { JobFailure } from './types';

/** The rows of a dataset version the job's config names (its storage key is in the assignment). */
export async function fetchRows(assignment: Assignment, sink: JobSink, datasetVersionId: string): Promise<Json[]> {
  return parseJsonl(new TextDecoder().decode(await sink.fetchBlob(blobKey(assignment, datasetVersionId, 'dataset version'))));
}

function parseJsonl(text: string): Json[] {
  const rows: Json[] = [];
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '') return;
    try {
      rows.push(JSON.parse(line) as Json);
    } catch (e) {
      throw new JobFailure(`dataset line ${i + 1} is not JSON: ${(e as Error).message}`);
    }
  });
  if (rows.length === 0) throw new JobFailure('the dataset has no rows');
  return rows;
}

