'use client';
import { useQueryClient } from '@tanstack/react-query';
import { createContext, type ReactNode, useCallback, useContext, useEffect, useRef, useState } from 'react';
import { io, type Socket } from 'socket.io-client';
import { type ClientToServerEvents, type LiveBatch, runRoom, type ServerToClientEvents } from '../../../sdk/live';
import { StreamCursor } from '../../../sdk/stream-cursor';
import { useTRPC } from '../../trpc';
import type { Point } from '../charts/bucketing';

/**
 * A run's live stream for its page: one socket.io connection joined to the run's room, whose
 * batches land in one store read by the charts, the rollout viewer and the header. Updates are
 * applied once per animation frame, however many batches came in it (a flood of points costs one
 * render a frame). After a lost connection it re-joins and catches up with runs.since from where
 * sdk/stream-cursor.ts says; metrics are keyed by (key, step) and rollouts by (step, agent,
 * index), so a point seen twice is still drawn once.
 */
export type Connection = 'connecting' | 'live' | 'offline' | 'catching-up';

export interface RunLive {
  connection: Connection;
  /** Bumped once per frame in which something arrived: memo keys for readers. */
  version: number;
  /** Points that came live (or in a catch-up) for a metric, in step order. */
  points(key: string): Point[];
  /** When a step's first point arrived live (ms), for an x axis by time; null if it did not. */
  timeOf(step: number): number | null;
  /** Metric keys seen live. */
  keys(): string[];
  /** Newest rollout step seen live (to refetch the viewer). */
  rolloutStep: number | null;
  /** Times (ms) at which steps arrived live: the measured step rate for the ETA. */
  stepTimes: Array<{ step: number; at: number }>;
  /** The newest game's positions that came live (multi-agent runs), move by move; null before one. */
  board: LiveBoard | null;
}

/** A game of a step as the runner streams it: its positions, each as the mover's observation. */
export interface LiveBoard {
  step: number;
  game: number;
  positions: string[];
}

const RunLiveContext = createContext<RunLive | null>(null);

export function useRunLive(): RunLive | null {
  return useContext(RunLiveContext);
}

type Browser = Socket<ServerToClientEvents, ClientToServerEvents>;

interface Store {
  metrics: Map<string, Map<number, number>>;
  /** Each key's points as an array, kept until the key changes: panels of unchanged keys skip their render. */
  arrays: Map<string, Point[]>;
  rolloutStep: number | null;
  stepTimes: Array<{ step: number; at: number }>;
  arrivals: Map<number, number>;
  board: LiveBoard | null;
}

/** At most this many points per metric are held live: older ones are in runs.series anyway. */
const KEPT_POINTS = 20_000;

function addMetric(store: Store, key: string, step: number, value: number) {
  let m = store.metrics.get(key);
  if (!m) store.metrics.set(key, (m = new Map()));
  m.set(step, value);
  if (m.size > KEPT_POINTS) m.delete(m.keys().next().value!);
  store.arrays.delete(key);
}

export function RunLiveProvider({ teamId, jobId, children }: { teamId: string; jobId: string; children: ReactNode }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [connection, setConnection] = useState<Connection>('connecting');
  const [version, setVersion] = useState(0);
  const store = useRef<Store>({ metrics: new Map(), arrays: new Map(), rolloutStep: null, stepTimes: [], arrivals: new Map(), board: null });

  useEffect(() => {
    const s = store.current;
    const cursor = new StreamCursor();
    let frame = 0;
    let closed = false;
    let joinedBefore = false;
    let logsMoved = false;
    let matchesMoved = false;
    const changed = () => {
      if (frame) return;
      frame = requestAnimationFrame(() => {
        frame = 0;
        setVersion((v) => v + 1);
        // The log tab reads its lines itself: one nudge a frame, however many batches came.
        if (logsMoved) void queryClient.invalidateQueries({ queryKey: trpc.runs.logs.pathKey() });
        // A game finished: the run's list of games (and the tab that shows it) is asked again.
        if (matchesMoved) void queryClient.invalidateQueries({ queryKey: trpc.runs.teamMatches.pathKey() });
        logsMoved = false;
        matchesMoved = false;
      });
    };
    const take = (batch: LiveBatch) => {
      cursor.saw(batch);
      if (batch.kind === 'metrics') {
        const now = Date.now();
        for (const p of batch.items) {
          addMetric(s, p.key, p.step, p.value);
          if (!s.arrivals.has(p.step)) s.arrivals.set(p.step, now);
          const last = s.stepTimes[s.stepTimes.length - 1];
          if (!last || p.step > last.step) s.stepTimes = [...s.stepTimes.slice(-50), { step: p.step, at: now }];
        }
      } else if (batch.kind === 'rollouts') {
        for (const r of batch.items) s.rolloutStep = Math.max(s.rolloutStep ?? r.step, r.step);
      } else if (batch.kind === 'logs') {
        logsMoved = true;
      } else if (batch.kind === 'matches') {
        matchesMoved = true;
      } else if (batch.kind === 'boards') {
        // The newest step's game: a later step's replaces it; its moves may come in several batches.
        for (const b of batch.items) {
          const current = s.board;
          if (current && (b.step < current.step || (b.step === current.step && b.game !== current.game))) continue;
          const positions = current && current.step === b.step ? [...current.positions] : [];
          positions[b.move] = b.text;
          s.board = { step: b.step, game: b.game, positions };
        }
      }
      changed();
    };

    const catchUp = async () => {
      setConnection('catching-up');
      let after = cursor.after;
      for (;;) {
        const page = await queryClient.fetchQuery({ ...trpc.runs.since.queryOptions({ teamId, jobId, after }), staleTime: 0 });
        for (const m of page.metrics) {
          cursor.saw(m);
          addMetric(s, m.key, m.step, m.value);
        }
        for (const r of page.rollouts) {
          cursor.saw(r);
          s.rolloutStep = Math.max(s.rolloutStep ?? r.step, r.step);
        }
        for (const l of page.logs) cursor.saw(l);
        if (page.complete || !page.through) break;
        after = page.through;
      }
      changed();
      // What the page shows besides the stream (state, checkpoints, logs) may have moved too.
      void queryClient.invalidateQueries({ queryKey: trpc.runs.pathKey() });
      void queryClient.invalidateQueries({ queryKey: trpc.jobs.get.pathKey() });
    };

    const socket: Browser = io({ path: '/socket.io', transports: ['websocket', 'polling'] });
    socket.on('connect', () => {
      socket.emit('subscribe', { room: runRoom(jobId) }, (answer) => {
        if (closed) return;
        if (!answer.ok) {
          setConnection('offline');
          return;
        }
        const again = joinedBefore;
        joinedBefore = true;
        if (!again) {
          setConnection('live');
          return;
        }
        catchUp().then(
          () => !closed && setConnection(socket.connected ? 'live' : 'offline'),
          () => !closed && setConnection('offline'),
        );
      });
    });
    socket.on('disconnect', () => setConnection('offline'));
    socket.on('connect_error', () => setConnection('offline'));
    socket.on('stream', take);
    socket.on('job', () => {
      void queryClient.invalidateQueries({ queryKey: trpc.runs.summary.pathKey() });
      void queryClient.invalidateQueries({ queryKey: trpc.jobs.get.pathKey() });
      void queryClient.invalidateQueries({ queryKey: trpc.runs.checkpoints.pathKey() });
    });
    // The browser knows it went offline before socket.io's heartbeat does.
    const offline = () => socket.disconnect();
    const online = () => socket.connect();
    window.addEventListener('offline', offline);
    window.addEventListener('online', online);
    return () => {
      closed = true;
      cancelAnimationFrame(frame);
      window.removeEventListener('offline', offline);
      window.removeEventListener('online', online);
      socket.close();
    };
  }, [teamId, jobId, trpc, queryClient]);

  const s = store.current;
  // The same function for the page's life: a chart's rows, computed with it, stay the same object
  // between live frames (a new function a frame made every panel compute and draw them again).
  const timeOf = useCallback((step: number) => store.current.arrivals.get(step) ?? null, []);
  const value: RunLive = {
    connection,
    version,
    points: (key) => {
      let points = s.arrays.get(key);
      if (!points) {
        points = [...(s.metrics.get(key) ?? [])].map(([step, v]) => ({ step, value: v })).sort((a, b) => a.step - b.step);
        s.arrays.set(key, points);
      }
      return points;
    },
    timeOf,
    keys: () => [...s.metrics.keys()],
    rolloutStep: s.rolloutStep,
    stepTimes: s.stepTimes,
    board: s.board,
  };
  return <RunLiveContext.Provider value={value}>{children}</RunLiveContext.Provider>;
}

/** The quiet banner of a lost connection. */
export function ConnectionBanner() {
  const live = useRunLive();
  if (!live || live.connection === 'live') return null;
  const text = {
    connecting: 'Connecting to the live stream…',
    offline: 'Connection lost: reconnecting. What the run does meanwhile appears once it is back.',
    'catching-up': 'Reconnected: catching up on what the run did meanwhile…',
  }[live.connection];
  return (
    <p className={`notice ${live.connection === 'offline' ? 'notice-warning' : 'notice-info'} live-banner`} role="status" data-connection={live.connection}>
      {text}
    </p>
  );
}
