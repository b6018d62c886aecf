'use client';
import dynamic from 'next/dynamic';
import { useParams } from 'next/navigation';
import { Loading } from '../../../../_ui/components';

// Monaco is loaded only here (and never on the server): the rest of the app's pages stay light.
const Workbench = dynamic(() => import('../../../../_ui/editor/workbench').then((m) => m.Workbench), {
  ssr: false,
  loading: () => <Loading label="Loading the editor…" />,
});

export default function EnvironmentPage() {
  const { teamId, environmentId } = useParams<{ teamId: string; environmentId: string }>();
  return <Workbench teamId={teamId} environmentId={environmentId} />;
}
