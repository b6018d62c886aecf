'use client';
import { Launcher } from '../../../_ui/launch/launcher';
import { useTeam } from '../../../_ui/team-context';

export default function LaunchPage() {
  const team = useTeam();
  return <Launcher teamId={team.id} />;
}
