/**
 * An agent's analytics: events per day by event name (a stacked bar chart of the filtered range), the events table
 * with the API's filters and pages through `nextToken`, and a CSV export of the whole filtered range.
 */
import { Anchor, Button, Group, Select, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { BarChart } from 'echarts/charts';
import { GridComponent, LegendComponent, TooltipComponent } from 'echarts/components';
import * as echarts from 'echarts/core';
import { CanvasRenderer } from 'echarts/renderers';
import { type FormEvent, useEffect, useMemo, useRef, useState } from 'react';
import { Link } from 'wouter';
import { type EventRecord, eventsCsv, perDay } from '../analytics';
import { type Api, unwrap } from '../api';
import { ErrorAlert, ScrollBox } from '../components';
import { ENVIRONMENTS, type Environment } from '../knowledge';

echarts.use([BarChart, GridComponent, LegendComponent, TooltipComponent, CanvasRenderer]);

interface Filters {
  readonly environment: Environment;
  readonly eventName?: string;
  readonly sessionId?: string;
  readonly startDate?: string;
  readonly endDate?: string;
}

/** The chart reads at most this many events of the range (the newest); the page says so when there are more. */
export const CHART_EVENT_CAP = 10_000;
const PAGE = 50;

function query(api: Api, agentId: string, filters: Filters, limit: number, nextToken?: string) {
  return unwrap(
    api.POST('/dashboard/agents/{agentId}/events', {
      params: { path: { agentId } },
      body: { filters, limit, ...(nextToken ? { nextToken } : {}) },
    }),
  );
}

/** Every event of the filtered range, newest first, a page of 1,000 at a time, stopping at `cap`. */
async function allEvents(api: Api, agentId: string, filters: Filters, cap: number) {
  const events: EventRecord[] = [];
  let token: string | undefined;
  do {
    const page = await query(api, agentId, filters, 1000, token);
    events.push(...page.data);
    token = page.nextToken ?? undefined;
  } while (token && events.length < cap);
  return { events: events.slice(0, cap), more: token !== undefined || events.length > cap };
}

function EventsChart({ events, range }: { events: readonly EventRecord[]; range: { from?: string; to?: string } }) {
  const host = useRef<HTMLDivElement>(null);
  const { days } = perDay(events, range);
  useEffect(() => {
    if (!host.current) return;
    const chart = echarts.init(host.current, undefined, { renderer: 'canvas' });
    const { days, series } = perDay(events, range);
    chart.setOption({
      animation: false,
      aria: { enabled: true },
      tooltip: { trigger: 'axis' },
      legend: { top: 0 },
      grid: { left: 40, right: 20, top: 40, bottom: 30 },
      xAxis: { type: 'category', data: days },
      yAxis: { type: 'value', minInterval: 1 },
      series: series.map((one) => ({ ...one, type: 'bar', stack: 'events' })),
    });
    const resize = () => chart.resize();
    window.addEventListener('resize', resize);
    return () => {
      window.removeEventListener('resize', resize);
      chart.dispose();
    };
  }, [events, range]);
  const total = events.length;
  return (
    <div
      ref={host}
      style={{ height: 280 }}
      role="img"
      aria-label={`Events per day by event name: ${total} events over ${days.length} days`}
    />
  );
}

export default function Analytics({ api, agentId }: { api: Api; agentId: string }) {
  const [draft, setDraft] = useState<Filters>({ environment: 'development' });
  const [filters, setFilters] = useState<Filters>({ environment: 'development' });
  const [tokens, setTokens] = useState<(string | undefined)[]>([undefined]);
  const [exporting, setExporting] = useState<{ busy: boolean; error?: unknown; url?: string; count?: number }>({
    busy: false,
  });
  const agent = useQuery({
    queryKey: ['agent', agentId],
    queryFn: () => unwrap(api.GET('/dashboard/agents/{agentId}', { params: { path: { agentId } } })),
  });
  const chart = useQuery({
    queryKey: ['events-chart', agentId, filters],
    queryFn: () => allEvents(api, agentId, filters, CHART_EVENT_CAP),
  });
  const page = useQuery({
    queryKey: ['events', agentId, filters, tokens.at(-1)],
    queryFn: () => query(api, agentId, filters, PAGE, tokens.at(-1)),
  });

  const chartRange = useMemo(
    () => ({ from: filters.startDate, to: filters.endDate }),
    [filters.startDate, filters.endDate],
  );

  function apply(event: FormEvent) {
    event.preventDefault();
    const clean = Object.fromEntries(Object.entries(draft).filter(([, value]) => value)) as unknown as Filters;
    setFilters(clean);
    setTokens([undefined]);
    setExporting({ busy: false });
  }

  async function exportCsv() {
    setExporting({ busy: true });
    try {
      const { events } = await allEvents(api, agentId, filters, Number.POSITIVE_INFINITY);
      const url = URL.createObjectURL(new Blob([eventsCsv(events)], { type: 'text/csv' }));
      setExporting({ busy: false, url, count: events.length });
    } catch (error) {
      setExporting({ busy: false, error });
    }
  }

  return (
    <Stack>
      <Title order={1}>Analytics of {agent.data?.displayName ?? 'the agent'}</Title>
      <Anchor component={Link} href="/agents">
        All agents
      </Anchor>
      <form onSubmit={apply} aria-label="Filter events">
        <Group align="flex-end">
          <Select
            label="Environment"
            data={[...ENVIRONMENTS]}
            value={draft.environment}
            allowDeselect={false}
            onChange={(value) => setDraft({ ...draft, environment: (value as Environment) ?? 'development' })}
          />
          <TextInput
            label="Event name"
            value={draft.eventName ?? ''}
            onChange={(e) => setDraft({ ...draft, eventName: e.currentTarget.value })}
          />
          <TextInput
            label="Session id"
            value={draft.sessionId ?? ''}
            onChange={(e) => setDraft({ ...draft, sessionId: e.currentTarget.value })}
          />
          <TextInput
            type="date"
            label="From (UTC)"
            value={draft.startDate ?? ''}
            onChange={(e) => setDraft({ ...draft, startDate: e.currentTarget.value })}
          />
          <TextInput
            type="date"
            label="To (UTC)"
            value={draft.endDate ?? ''}
            onChange={(e) => setDraft({ ...draft, endDate: e.currentTarget.value })}
          />
          <Button type="submit" variant="default">
            Apply
          </Button>
        </Group>
      </form>
      <ErrorAlert error={agent.error ?? chart.error ?? page.error} />
      {chart.data && chart.data.events.length === 0 && (
        <Text>
          No events
          {filters.startDate || filters.endDate
            ? ` from ${filters.startDate ?? 'the first'} to ${filters.endDate ?? 'today'} (UTC)`
            : ' yet'}
          {filters.eventName ? ` named ${filters.eventName}` : ''} in {filters.environment}.
        </Text>
      )}
      {chart.data && perDay(chart.data.events, chartRange).days.length > 0 && (
        <>
          <EventsChart events={chart.data.events} range={chartRange} />
          {chart.data.more && (
            <Text size="sm">The chart shows the newest {CHART_EVENT_CAP.toLocaleString()} events of the range.</Text>
          )}
        </>
      )}
      <Group>
        <Button variant="default" onClick={exportCsv} loading={exporting.busy}>
          Export the filtered range as CSV
        </Button>
        {exporting.url && (
          <Anchor href={exporting.url} download={`events-${agentId}-${filters.environment}.csv`}>
            Download {exporting.count} events (CSV)
          </Anchor>
        )}
      </Group>
      <ErrorAlert error={exporting.error} />
      {page.data && page.data.count === 0 && <Text>No events match.</Text>}
      {page.data && page.data.count > 0 && (
        <ScrollBox label="Events (scrolls sideways)">
          <Table striped aria-label="Events">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Time (UTC)</Table.Th>
                <Table.Th>Event</Table.Th>
                <Table.Th>Session</Table.Th>
                <Table.Th>Payload</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {page.data.data.map((event) => (
                <Table.Tr key={event.id}>
                  <Table.Td>{event.created_at}</Table.Td>
                  <Table.Td>{event.eventName}</Table.Td>
                  <Table.Td>
                    <Text size="xs" ff="monospace">
                      {event.sessionId ?? ''}
                    </Text>
                  </Table.Td>
                  <Table.Td>
                    <Text size="xs" ff="monospace" lineClamp={2}>
                      {JSON.stringify(event.payload)}
                    </Text>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </ScrollBox>
      )}
      <Group>
        <Button variant="default" disabled={tokens.length < 2} onClick={() => setTokens(tokens.slice(0, -1))}>
          Newer events
        </Button>
        <Button
          variant="default"
          disabled={!page.data?.nextToken}
          onClick={() => page.data?.nextToken && setTokens([...tokens, page.data.nextToken])}
        >
          Older events
        </Button>
      </Group>
    </Stack>
  );
}
