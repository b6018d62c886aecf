'use client';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useCallback, useEffect, useRef, useState } from 'react';
import { io, type Socket } from 'socket.io-client';
import { type ClientToServerEvents, runRoom, type SampleEvent, type ServerToClientEvents } from '../../../sdk/live';
import { useTRPC } from '../../trpc';

/** How long a playground's session stays loaded without a request: the worker then frees its device. */
const IDLE_SECONDS = 300;

/** One completion as it streams: its tokens, then how it ended. */
export interface Completion {
  requestId: string;
  /** The page's request it belongs to (N samples share one). */
  batch: number;
  seed: number;
  tokens: Array<Extract<SampleEvent, { kind: 'token' }>>;
  done: Extract<SampleEvent, { kind: 'done' }> | null;
  /** When the request was sent and its first token drawn (for the tokens-per-second line). */
  sentAt: number;
  firstAt: number | null;
  lastAt: number | null;
}

export type SessionPhase = 'opening' | 'placing' | 'loading' | 'ready' | 'ended' | 'failed';

/** What a session serves: a checkpoint, or an imported model as it was imported. */
export type Served = { checkpointId: string } | { modelId: string };

/** One string for what is served (a checkpoint's id, or model:<id>), for keys and effects. */
export function servedKey(served: Served): string {
  return 'checkpointId' in served ? served.checkpointId : `${MODEL_KEY}${served.modelId}`;
}

const MODEL_KEY = 'model:';

/** What a key names (the reverse of servedKey): a page's `?vs=` is a key. */
export function servedOf(key: string): Served {
  return key.startsWith(MODEL_KEY) ? { modelId: key.slice(MODEL_KEY.length) } : { checkpointId: key };
}

/**
 * A checkpoint's (or imported model's) inference session for a page: opens (or reuses) the team's session with
 * `inference.open`, follows its job over socket.io (the run's room carries job changes and the
 * sampled tokens), and closes it when the page is left. A session that ended (idle, cancelled,
 * failed) can be started again with `restart`.
 */
export function useInferenceSession(teamId: string, served: Served) {
  const key = servedKey(served);
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [jobId, setJobId] = useState<string | null>(null);
  // Requests in the order sent, and every sample event by request: a token can arrive before the
  // request's own answer does, so events are kept whether or not their request is known yet.
  const [requests, setRequests] = useState<Array<{ requestId: string; batch: number; seed: number; sentAt: number }>>([]);
  const streams = useRef(new Map<string, Pick<Completion, 'tokens' | 'done' | 'firstAt' | 'lastAt'>>());
  const [, setVersion] = useState(0);
  const open = useMutation(trpc.inference.open.mutationOptions());
  const close = useMutation(trpc.inference.close.mutationOptions());
  const sample = useMutation(trpc.inference.sample.mutationOptions());
  const jobRef = useRef<string | null>(null);

  const alive = useRef(true);

  const start = useCallback(() => {
    // mutateAsync, not mutate's callbacks: those do not run once the page is gone, and a session
    // that opens after the page was left must still be closed.
    open
      .mutateAsync({ teamId, ...served, idleSeconds: IDLE_SECONDS })
      .then((r) => {
        if (!alive.current) return void close.mutate({ teamId, jobId: r.jobId });
        jobRef.current = r.jobId;
        setJobId(r.jobId);
      })
      .catch(() => undefined); // shown from open.error
    // `open` and `close` are fresh objects each render; their mutate functions are stable. `served`
    // is a fresh object too: its key says when it changes.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [teamId, key]);

  useEffect(() => {
    alive.current = true;
    start();
    // Leaving the page ends the session (the worker's idle timeout would, later).
    return () => {
      alive.current = false;
      if (jobRef.current) close.mutate({ teamId, jobId: jobRef.current });
      jobRef.current = null;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [start]);

  const job = useQuery({
    ...trpc.runs.summary.queryOptions({ teamId, jobId: jobId ?? '' }),
    enabled: jobId !== null,
    // The room's job events ask again at once; the poll is the fallback for a dropped socket.
    refetchInterval: (q) => (q.state.data && ['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(q.state.data.state) ? false : 5000),
  });

  useEffect(() => {
    if (!jobId) return;
    const socket: Socket<ServerToClientEvents, ClientToServerEvents> = io({ path: '/socket.io', transports: ['websocket', 'polling'] });
    socket.on('connect', () => socket.emit('subscribe', { room: runRoom(jobId) }, () => {}));
    socket.on('job', () => void queryClient.invalidateQueries({ queryKey: trpc.runs.summary.queryKey({ teamId, jobId }) }));
    let frame = 0;
    socket.on('sample', (event) => {
      const now = performance.now();
      const s = streams.current.get(event.requestId) ?? { tokens: [], done: null, firstAt: null, lastAt: null };
      if (event.kind === 'token') streams.current.set(event.requestId, { ...s, tokens: [...s.tokens, event], firstAt: s.firstAt ?? now, lastAt: now });
      else streams.current.set(event.requestId, { ...s, done: event });
      // One render a frame, however many tokens came in it.
      if (!frame) frame = requestAnimationFrame(() => ((frame = 0), setVersion((v) => v + 1)));
    });
    return () => {
      cancelAnimationFrame(frame);
      socket.close();
    };
  }, [jobId, teamId, trpc, queryClient]);

  const state = job.data?.state;
  const phase: SessionPhase = open.isError
    ? 'failed'
    : !jobId || !state
      ? 'opening'
      : state === 'QUEUED' || state === 'PREEMPTED'
        ? 'placing'
        : state === 'ASSIGNED'
          ? 'loading'
          : state === 'RUNNING'
            ? 'ready'
            : state === 'FAILED'
              ? 'failed'
              : 'ended';

  /** Sends one request; its tokens stream into `completions` under the returned id. */
  const generate = useCallback(
    async (params: Omit<Parameters<typeof sample.mutateAsync>[0], 'teamId' | 'jobId'> & { seed: number }, batch = 0) => {
      if (!jobRef.current) throw new Error('the session is not open yet');
      const sentAt = performance.now();
      const { requestId } = await sample.mutateAsync({ teamId, jobId: jobRef.current, ...params });
      setRequests((all) => [...all, { requestId, batch, seed: params.seed, sentAt }]);
      return requestId;
    },
    // eslint-disable-next-line react-hooks/exhaustive-deps
    [teamId],
  );

  const restart = useCallback(() => {
    setJobId(null);
    jobRef.current = null;
    start();
  }, [start]);

  return {
    jobId,
    phase,
    job: job.data ?? null,
    openError: open.error,
    sampleError: sample.error,
    completions: requests.map((r): Completion => ({ ...r, ...(streams.current.get(r.requestId) ?? { tokens: [], done: null, firstAt: null, lastAt: null }) })),
    clear: () => setRequests([]),
    generate,
    restart,
  };
}
