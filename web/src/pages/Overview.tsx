// The workspace at a glance: its plan, usage against the plan's limits, messages per day.
import { useQuery } from "@tanstack/react-query";
import { Bar, BarChart, CartesianGrid, Legend, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import { api, expectOk } from "../api";
import { formatCount } from "../format";
import { Page, ProblemNote } from "../ui";

function limitText(used: number, limit: number | null): string {
  return limit === null ? `${formatCount(used)} (unlimited)` : `${formatCount(used)} of ${formatCount(limit)}`;
}

export function Overview() {
  const overview = useQuery({ queryKey: ["workspace"], queryFn: () => expectOk(api.workspace.get()) });
  const usage = useQuery({ queryKey: ["usage", 30], queryFn: () => expectOk(api.workspace.usage({ query: { days: 30 } })) });
  return (
    <Page title="Overview">
      <ProblemNote error={overview.error ?? usage.error} />
      {overview.data && (
        <dl className="facts">
          <dt>Workspace</dt>
          <dd>{overview.data.workspace.name}</dd>
          <dt>Plan</dt>
          <dd>{overview.data.plan.name}</dd>
          <dt>Connections</dt>
          <dd>{limitText(overview.data.usage.connections, overview.data.plan.limits.connections)}</dd>
          <dt>Messages this month</dt>
          <dd>{limitText(overview.data.usage.messages_this_month, overview.data.plan.limits.messages_per_month)}</dd>
        </dl>
      )}
      {usage.data && (
        <figure>
          <figcaption>
            Messages per day, {usage.data.from} to {usage.data.to} (UTC): {formatCount(usage.data.totals.messages_outbound)} sent,{" "}
            {formatCount(usage.data.totals.messages_inbound)} received
          </figcaption>
          <div className="chart" role="img" aria-label="Bar chart of messages sent and received per day">
            <ResponsiveContainer width="100%" height={240}>
              <BarChart data={usage.data.daily}>
                <CartesianGrid strokeDasharray="3 3" />
                <XAxis dataKey="date" tickFormatter={(d: string) => d.slice(5)} />
                <YAxis allowDecimals={false} tickFormatter={formatCount} />
                <Tooltip />
                <Legend />
                <Bar dataKey="messages_outbound" name="Sent" fill="#2563eb" />
                <Bar dataKey="messages_inbound" name="Received" fill="#16a34a" />
              </BarChart>
            </ResponsiveContainer>
          </div>
        </figure>
      )}
    </Page>
  );
}
