'use client';
import { Bar, BarChart, CartesianGrid, ReferenceLine, Tooltip, XAxis, YAxis } from 'recharts';
import { chartColours, tooltipStyles } from './charts/colours';
import { useEffectiveTheme } from './theme';

const hourOf = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', hour12: false });

/**
 * A team's device use over the last 24 hours, one bar an hour (devices held on average in it), with
 * its quota as a line: the history behind the "Devices in use" meter. The totals are said in words
 * beside it for a reader who cannot see the bars.
 */
export function UsageChart({ history, quota }: { history: Array<{ hourStart: Date | string; devices: number }>; quota: number }) {
  const colours = chartColours(useEffectiveTheme());
  const rows = history.map((h) => ({ hour: hourOf.format(new Date(h.hourStart)), devices: h.devices }));
  const total = history.reduce((s, h) => s + h.devices, 0);
  const peak = Math.max(0, ...history.map((h) => h.devices));
  return (
    <figure className="usage-chart" aria-label="Devices in use, hour by hour, over the last 24 hours">
      <figcaption className="small muted">
        Last 24 hours: {total.toFixed(1)} device-hours, at most {peak.toFixed(2)} devices on average in an hour (quota {quota}).
      </figcaption>
      <div className="usage-chart-box" aria-hidden="true">
        <BarChart data={rows} style={{ width: '100%', height: '100%' }} responsive margin={{ top: 6, right: 8, bottom: 0, left: 0 }} accessibilityLayer={false}>
          <CartesianGrid stroke={colours.grid} strokeDasharray="3 3" vertical={false} />
          <XAxis dataKey="hour" stroke={colours.text} tick={{ fill: colours.text, fontSize: 10 }} interval={3} />
          <YAxis width={32} tickCount={3} stroke={colours.text} tick={{ fill: colours.text, fontSize: 10 }} domain={[0, Math.max(quota, peak, 1)]} />
          <Tooltip
            isAnimationActive={false}
            {...tooltipStyles(colours)}
            formatter={(v) => [`${Number(v).toFixed(2)} devices`, 'on average']}
          />
          <ReferenceLine y={quota} stroke={colours.marker} strokeDasharray="4 2" />
          <Bar dataKey="devices" fill={colours.line} isAnimationActive={false} />
        </BarChart>
      </div>
    </figure>
  );
}
