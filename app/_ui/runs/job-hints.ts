'use client';
import { useQueryClient } from '@tanstack/react-query';
import { useEffect } from 'react';
import { io, type Socket } from 'socket.io-client';
import { type ClientToServerEvents, type ServerToClientEvents, teamRoom } from '../../../sdk/live';
import { useTRPC } from '../../trpc';

/**
 * A team's job hints (socket.io event `job` in the team's room): lists of runs ask again as soon
 * as a job changes, instead of waiting for their next poll. Re-joins after a reconnect.
 */
export function useJobHints(teamId: string) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  useEffect(() => {
    const socket: Socket<ServerToClientEvents, ClientToServerEvents> = io({ path: '/socket.io', transports: ['websocket', 'polling'] });
    socket.on('connect', () => socket.emit('subscribe', { room: teamRoom(teamId) }, () => {}));
    socket.on('job', () => {
      void queryClient.invalidateQueries({ queryKey: trpc.runs.list.pathKey() });
      void queryClient.invalidateQueries({ queryKey: trpc.runs.series.pathKey() });
    });
    return () => {
      socket.close();
    };
  }, [teamId, trpc, queryClient]);
}
