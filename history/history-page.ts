// The page of `history report`: one self-contained HTML page of the fleet in the store, of a size bounded whatever the fleet.
// Per driver version of the GPUs (CUDA and HIP devices; the other backends never register), from each host's
// latest run with that driver: the devices by verdict, the registered GB/s as percentiles (p1, p50, p99, linear
// interpolation between closest ranks, as DuckDB's quantile_cont) drawn as a range chart, the checks that failed
// on some device with how many, and the devices that regressed against the driver version before it (by
// `history compare`'s rules, so by compare's), grouped by host and capped, with a count of the rest.
// Its shell, what it may load and its escaping are reporters/html-page.ts's: every text from the store is escaped.
import type { DuckDBConnection } from '@duckdb/node-api';
import { registeringBackendIds } from '../bindings/registry.js';
import { changeLine, countsLine, failingChanges } from '../results/compare.js';
import type { Expectations } from '../results/expectations.js';
import { capComparedDevice } from '../reporters/cap.js';
import { escapeHtml, htmlPage, utcMinute as utc } from '../reporters/html-page.js';
import { compareVersions } from '../results/versions.js';
import { capText, MESSAGE_CAP, NAME_CAP } from '../reporters/safe-text.js';
import { asComparison, compareSides, type HistoryComparison, type Side } from './fleet-compare.js';
import type { Store } from './store.js';
import { percent, plural, twoDecimals as f2 } from '../results/format.js';

export const GPU_BACKENDS: readonly string[] = registeringBackendIds();
/** Hosts shown with their regressed devices, per driver version; the rest are counted. */
export const HOSTS_SHOWN = 50;
/** Failing changes shown per host; the rest are counted. */
export const LINES_PER_HOST = 12;

type Row = Record<string, unknown>;
const rows = async (c: DuckDBConnection, sql: string): Promise<Row[]> => (await c.runAndReadAll(sql)).getRowObjectsJS() as Row[];
const s = (x: unknown): string => String(x);
const n = (x: unknown): number => Number(x);
const e = escapeHtml;

export interface DriverStats {
  dname: string;
  dver: string;
  hosts: number;
  devices: number;
  from: string;
  to: string;
  verdicts: { label: string; devices: number }[];
  /** Devices with a registered figure, and its percentiles. */
  measured: number;
  p1?: number;
  p50?: number;
  p99?: number;
  checks: { id: string; fail: number; timeout: number; crash: number; error: number; warn: number }[];
  /** Devices with a failing check (fail, timeout, crash). */
  failingDevices: number;
  /** Against the driver version before it (same driver name), if any. */
  against?: { dver: string; comparison: HistoryComparison };
}

/** The figures of every GPU driver version in the store (each host's latest run with that driver). */
export async function driverStats(store: Store, o: { maxDrop: number; expectations?: Expectations }): Promise<DriverStats[]> {
  const { c } = store;
  const gpu = GPU_BACKENDS.map((b) => `'${b}'`).join(', ');
  await c.run(`CREATE OR REPLACE TEMP TABLE rep_dev AS
    WITH g AS (SELECT DISTINCT d.dname, d.dver, r.host, r.run, r.started_ms, r.started_at FROM devices d JOIN runs r ON r.run = d.run WHERE d.backend IN (${gpu})),
    latest AS (SELECT * FROM g QUALIFY row_number() OVER (PARTITION BY dname, dver, host ORDER BY started_ms DESC NULLS LAST, started_at DESC, run DESC) = 1)
    SELECT l.host, l.started_at, d.* FROM latest l JOIN devices d ON d.run = l.run AND d.dname = l.dname AND d.dver = l.dver AND d.backend IN (${gpu})`);
  const heads = await rows(
    c,
    `SELECT dname, dver, count(DISTINCT host) AS hosts, count(*) AS devices, min(started_at) AS "from", max(started_at) AS "to",
       count(registered) AS measured, quantile_cont(registered, 0.01) AS p1, quantile_cont(registered, 0.5) AS p50, quantile_cont(registered, 0.99) AS p99,
       count(*) FILTER (WHERE failing) AS failing_devices
     FROM rep_dev GROUP BY dname, dver`,
  );
  const verdicts = await rows(c, `SELECT dname, dver, vlabel, count(*) AS devices FROM rep_dev GROUP BY ALL ORDER BY devices DESC, vlabel`);
  const checks = await rows(
    c,
    `SELECT x.dname, x.dver, k.check_id, count(*) FILTER (WHERE k.status = 'fail') AS fail, count(*) FILTER (WHERE k.status = 'timeout') AS timeout,
       count(*) FILTER (WHERE k.status = 'crash') AS crash, count(*) FILTER (WHERE k.status = 'error') AS error, count(*) FILTER (WHERE k.status = 'warn') AS warn
     FROM rep_dev x JOIN checks k ON k.run = x.run AND k.ord = x.ord
     WHERE k.status IN ('fail', 'timeout', 'crash', 'error', 'warn') GROUP BY ALL ORDER BY fail + timeout + crash DESC, error DESC, warn DESC, check_id`,
  );
  await c.run('DROP TABLE temp.rep_dev');
  const key = (r: Row): string => `${s(r.dname)}\u0000${s(r.dver)}`;
  const stats: DriverStats[] = heads
    .map((h) => ({
      dname: s(h.dname),
      dver: s(h.dver),
      hosts: n(h.hosts),
      devices: n(h.devices),
      from: s(h.from),
      to: s(h.to),
      verdicts: verdicts.filter((v) => key(v) === key(h)).map((v) => ({ label: s(v.vlabel), devices: n(v.devices) })),
      measured: n(h.measured),
      ...(h.p1 !== null ? { p1: n(h.p1), p50: n(h.p50), p99: n(h.p99) } : {}),
      checks: checks.filter((k) => key(k) === key(h)).map((k) => ({ id: s(k.check_id), fail: n(k.fail), timeout: n(k.timeout), crash: n(k.crash), error: n(k.error), warn: n(k.warn) })),
      failingDevices: n(h.failing_devices),
    }))
    .sort((a, b) => (a.dname < b.dname ? -1 : a.dname > b.dname ? 1 : compareVersions(a.dver, b.dver)));
  const exact = (d: DriverStats): Side => ({ label: `${d.dname} ${d.dver}`, device: (x) => x.dname === d.dname && x.dver === d.dver });
  for (let i = 1; i < stats.length; i++) {
    const [prev, cur] = [stats[i - 1]!, stats[i]!];
    if (prev.dname !== cur.dname) continue;
    cur.against = { dver: prev.dver, comparison: await compareSides(store, exact(prev), exact(cur), o) };
  }
  // what the page repeats from the store is capped as every report caps it (reporters/cap.ts), once compared in full
  const name = (x: string): string => capText(x, NAME_CAP);
  return stats.map((d) => ({
    ...d,
    dname: name(d.dname),
    dver: name(d.dver),
    from: name(d.from),
    to: name(d.to),
    verdicts: d.verdicts.map((v) => ({ ...v, label: name(v.label) })),
    checks: d.checks.map((k) => ({ ...k, id: name(k.id) })),
    ...(d.against ? { against: { dver: name(d.against.dver), comparison: capComparison(d.against.comparison) } } : {}),
  }));
}

/** A comparison with what the page repeats of it capped: its devices and changes, the hosts it names. */
function capComparison(h: HistoryComparison): HistoryComparison {
  const name = (x: string): string => capText(x, NAME_CAP);
  return { ...h, devices: h.devices.map(capComparedDevice), notCompared: { ...h.notCompared, hosts: h.notCompared.hosts.map(name) }, gpusGone: { ...h.gpusGone, hosts: h.gpusGone.hosts.map(name) } };
}

// ---------------------------------------------------------------------------------------------------------------

/** The page's own style, after the shell's (reporters/html-page.ts). */
const CSS = `h3 { font-size: 14px; margin: 18px 0 6px; }
p.meta { color: #57606a; margin: 2px 0; }
code { font-family: "DejaVu Sans Mono", "Liberation Mono", monospace; font-size: 12px; }
table.t { border-collapse: collapse; margin-top: 6px; }
table.t th, table.t td { border: 1px solid #d0d7de; padding: 3px 7px; text-align: left; vertical-align: top; }
table.t thead th { background: #f6f8fa; font-weight: 600; vertical-align: bottom; }
table.t td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.t td.zero { color: #8c959f; }
table.t td.bad { background: #ffebe9; color: #a40e26; font-weight: 600; }
.v-good { color: #116329; font-weight: 600; }
.regressed { color: #a40e26; font-weight: 600; }
.ok { color: #116329; font-weight: 600; }
.host-error { color: #7d4e00; font-weight: 600; }
ul.hosts { margin: 4px 0 0; padding-left: 18px; }
ul.hosts li.host { margin: 6px 0; }
ul.lines { margin: 2px 0; padding-left: 16px; }
ul.lines li { overflow-wrap: anywhere; }
.more { color: #57606a; font-style: italic; }
svg.chart { display: block; font-family: "DejaVu Sans", "Liberation Sans", Arial, sans-serif; border: 1px solid #d0d7de; border-radius: 4px; }
svg.chart .bg { fill: #fff; }
svg.chart .grid { stroke: #e6e9ed; stroke-width: 1; }
svg.chart .axis { stroke: #57606a; stroke-width: 1; }
svg.chart .tick, svg.chart .label { font-size: 11px; fill: #424a53; }
svg.chart .range { stroke: #0969da; stroke-width: 6; stroke-linecap: round; opacity: 0.35; }
svg.chart .median { fill: #0969da; stroke: #fff; stroke-width: 1.5; }
svg.chart .value { font-size: 11px; font-weight: 600; fill: #0969da; }
`;

/** A round step for about 5 ticks up to `max`. */
function niceStep(max: number): number {
  const raw = max / 5;
  const p = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}

/** The registered GB/s of each driver version: a bar from p1 to p99, a point at p50, each figure written beside it. */
function percentileChart(stats: DriverStats[]): string {
  const shown = stats.filter((d) => d.p50 !== undefined);
  if (shown.length === 0) return '<p class="meta">No registered GB/s was measured.</p>';
  const labelW = Math.min(340, Math.max(120, ...shown.map((d) => `${d.dname} ${d.dver}`.length * 6.6)));
  const plotW = 560;
  const rowH = 44;
  const top = 16;
  const width = Math.ceil(labelW + plotW + 30);
  const height = top + rowH * shown.length + 30;
  const max = Math.max(...shown.map((d) => d.p99!));
  const step = niceStep(max > 0 ? max * 1.08 : 1);
  const xMax = Math.max(step, Math.ceil((max * 1.08) / step) * step);
  const x = (v: number): number => Math.round((labelW + (Math.max(0, v) / xMax) * plotW) * 10) / 10;
  const desc = shown.map((d) => `${d.dname} ${d.dver}: p1 ${f2(d.p1)}, p50 ${f2(d.p50)}, p99 ${f2(d.p99)} GB/s`).join('; ');
  const out = [
    `<svg class="chart" id="gbps-chart" role="img" aria-labelledby="gbps-title gbps-desc" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">`,
    `<title id="gbps-title">Registered GB/s per driver version: p1 to p99, and p50</title>`,
    `<desc id="gbps-desc">${e(desc)}</desc>`,
    `<rect class="bg" x="0" y="0" width="${width}" height="${height}"/>`,
  ];
  const bottom = top + rowH * shown.length;
  for (let k = 0; k * step <= xMax + step / 1e6; k++) {
    const xx = x(k * step);
    out.push(`<line class="grid" x1="${xx}" y1="${top}" x2="${xx}" y2="${bottom}"/>`, `<text class="tick" x="${xx}" y="${bottom + 14}" text-anchor="middle">${(k * step).toFixed(step < 1 ? 1 : 0)}</text>`);
  }
  out.push(`<line class="axis" x1="${labelW}" y1="${bottom}" x2="${labelW + plotW}" y2="${bottom}"/>`, `<text class="tick" x="${labelW + plotW}" y="${bottom + 27}" text-anchor="end">registered GB/s</text>`);
  shown.forEach((d, i) => {
    const y = top + rowH * i + rowH / 2;
    const name = `${d.dname} ${d.dver}`;
    out.push(
      `<g class="row" data-driver="${e(name)}">`,
      `<text class="label" x="${labelW - 8}" y="${y}" text-anchor="end" dominant-baseline="middle">${e(name.length > 52 ? `${name.slice(0, 51)}…` : name)}</text>`,
      `<line class="range" x1="${x(d.p1!)}" y1="${y}" x2="${x(d.p99!)}" y2="${y}"><title>${e(`${name}: p1 ${f2(d.p1)} to p99 ${f2(d.p99)} GB/s`)}</title></line>`,
      `<circle class="median" cx="${x(d.p50!)}" cy="${y}" r="5"><title>${e(`${name}: p50 ${f2(d.p50)} GB/s`)}</title></circle>`,
      `<text class="value" data-p="p1" x="${x(d.p1!) - 4}" y="${y - 10}" text-anchor="end">${f2(d.p1)}</text>`,
      `<text class="value" data-p="p50" x="${x(d.p50!)}" y="${y + 18}" text-anchor="middle">${f2(d.p50)}</text>`,
      `<text class="value" data-p="p99" x="${x(d.p99!) + 4}" y="${y - 10}" text-anchor="start">${f2(d.p99)}</text>`,
      '</g>',
    );
  });
  out.push('</svg>');
  return out.join('\n');
}


/** The regressed devices of a comparison, grouped by host, HOSTS_SHOWN hosts at most. */
function regressedList(h: HistoryComparison): string {
  const failing = failingChanges(asComparison(h));
  const byHost = new Map<string, typeof failing>();
  for (const f of failing) {
    const host = f.device.host ?? '?';
    byHost.set(host, [...(byHost.get(host) ?? []), f]);
  }
  const devicesOf = (list: typeof failing): number => new Set(list.map((f) => f.device.key)).size;
  const hosts = [...byHost.keys()].sort();
  const out: string[] = [];
  // a device whose every failing change is the host's (a check the host failed, a figure of a busy machine) did not regress: it was not judged
  const driver = failing.filter((f) => f.change.kind !== 'error');
  const hostOnly = devicesOf(failing) - devicesOf(driver);
  const regressed = driver.length ? `<span class="regressed">${plural(devicesOf(driver), 'regressed device')} on ${plural(new Set(driver.map((f) => f.device.host ?? '?')).size, 'host')}</span>` : '<span class="ok">no regressed device</span>';
  const notJudged = hostOnly ? `; <span class="host-error">${plural(hostOnly, 'device')} not judged: the host, not the driver</span>` : '';
  out.push(
    `<p class="summary">${regressed}${notJudged}: ${e(countsLine(h.counts))}` +
      `${h.notCompared.count ? `; ${plural(h.notCompared.count, 'host')} with no run of this version yet (not compared)` : ''}.</p>`,
  );
  if (!failing.length) return out.join('\n');
  out.push('<ul class="hosts">');
  for (const host of hosts.slice(0, HOSTS_SHOWN)) {
    const list = byHost.get(host)!;
    out.push(`<li class="host" data-host="${e(host)}"><strong>${e(host)}</strong> <span class="meta">(${plural(devicesOf(list), 'device')})</span><ul class="lines">`);
    for (const f of list.slice(0, LINES_PER_HOST)) out.push(`<li class="line" data-kind="${e(f.change.kind)}">${e(capText(changeLine(f.device, f.change).replace(`${host} `, ''), MESSAGE_CAP))}</li>`);
    if (list.length > LINES_PER_HOST) out.push(`<li class="more">and ${list.length - LINES_PER_HOST} more</li>`);
    out.push('</ul></li>');
  }
  out.push('</ul>');
  if (hosts.length > HOSTS_SHOWN) {
    const rest = hosts.slice(HOSTS_SHOWN);
    out.push(`<p class="more" data-more-hosts="${rest.length}">and ${plural(rest.length, 'more host')} (${plural(rest.reduce((t, hh) => t + devicesOf(byHost.get(hh)!), 0), 'regressed device')}): <code>history compare --json</code> lists every one.</p>`);
  }
  return out.join('\n');
}

/** The page. */
export async function historyReport(store: Store, o: { maxDrop: number; lastRuns?: number; expectations?: Expectations }): Promise<string> {
  const stats = await driverStats(store, o);
  const totals = (await rows(store.c, `SELECT (SELECT count(*) FROM runs) AS runs, (SELECT count(DISTINCT host) FROM runs) AS hosts, (SELECT count(*) FROM devices) AS devices, (SELECT count(*) FROM devices WHERE backend NOT IN (${GPU_BACKENDS.map((b) => `'${b}'`).join(', ')})) AS others`))[0]!;
  const title = 'mapped-reg-conformance: the fleet across driver versions';
  const out: string[] = [
    `<p class="meta">The history store holds ${plural(n(totals.runs), 'run')} of ${plural(n(totals.hosts), 'host')}, ${plural(n(totals.devices), 'device')}. Per GPU driver version, each host's latest run with it; ` +
      `${plural(n(totals.others), 'device')} of other backends (OpenCL, Vulkan, CPU: they never register) are not shown. A regression is judged as <code>compare</code> judges it, ` +
      `against the driver version before (a drop of the registered GB/s of more than ${percent(o.maxDrop)}${o.expectations ? `; expectations ${e(capText(o.expectations.file, MESSAGE_CAP))}` : ''}).</p>`,
  ];
  if (stats.length === 0) {
    out.push('<p>No GPU device in the store.</p>');
    return htmlPage({ title, style: CSS, body: out });
  }
  const labels = [...new Set(stats.flatMap((d) => d.verdicts.map((v) => v.label)))].sort((a, b) => (a === 'Usable' ? -1 : b === 'Usable' ? 1 : a < b ? -1 : a > b ? 1 : 0));
  out.push('<h2 id="drivers">Driver versions</h2>');
  out.push('<table class="t" id="summary" aria-label="Per driver version: hosts, devices by verdict, registered GB/s percentiles, failing devices, regressions">');
  out.push(
    `<thead><tr><th scope="col">driver</th><th scope="col">hosts</th><th scope="col">devices</th>${labels.map((l) => `<th scope="col" class="verdict">${e(l)}</th>`).join('')}` +
      '<th scope="col">registered GB/s<br>p1</th><th scope="col">p50</th><th scope="col">p99</th><th scope="col">devices with<br>a failing check</th><th scope="col">regressed devices<br>against the version before</th></tr></thead>',
  );
  out.push('<tbody>');
  for (const d of stats) {
    // the driver's regressions only: a device the host failed was not judged (the version's section says so)
    const regressedDevices = d.against ? new Set(failingChanges(asComparison(d.against.comparison)).filter((f) => f.change.kind !== 'error').map((f) => f.device.key)).size : undefined;
    const cell = (k: number, cls = ''): string => `<td class="num${k === 0 ? ' zero' : cls}">${k}</td>`;
    out.push(
      `<tr class="driver" data-driver="${e(`${d.dname} ${d.dver}`)}"><th scope="row">${e(`${d.dname} ${d.dver}`)}<br><span class="meta">${e(`${utc(d.from)} to ${utc(d.to)}`)}</span></th>` +
        `<td class="num hosts">${d.hosts}</td><td class="num devices">${d.devices}</td>` +
        labels.map((l) => cell(d.verdicts.find((v) => v.label === l)?.devices ?? 0, l === 'Usable' ? '' : ' bad').replace('<td class="num', `<td data-verdict="${e(l)}" class="num`)).join('') +
        `<td class="num p1">${f2(d.p1)}</td><td class="num p50">${f2(d.p50)}</td><td class="num p99">${f2(d.p99)}</td>` +
        cell(d.failingDevices, ' bad').replace('<td class="num', '<td class="num failing-devices') +
        (regressedDevices === undefined ? '<td class="num regressed-devices">-</td>' : cell(regressedDevices, ' bad').replace('<td class="num', '<td class="num regressed-devices')) +
        '</tr>',
    );
  }
  out.push('</tbody></table>');
  out.push('<h2 id="bandwidth">Registered GB/s</h2>');
  out.push(`<p class="meta">Per driver version, over its devices with a figure: the bar runs from the 1st to the 99th percentile, the point is the median (linear interpolation between closest ranks).</p>`);
  out.push(percentileChart(stats));

  stats.forEach((d, i) => {
    const name = `${d.dname} ${d.dver}`;
    out.push(`<section class="version" id="v-${i}" data-driver="${e(name)}">`, `<h2>${e(name)}</h2>`);
    out.push(`<p class="meta">${plural(d.hosts, 'host')}, ${plural(d.devices, 'device')} (${plural(d.measured, 'with a registered figure', 'with a registered figure')}); runs from ${e(utc(d.from))} to ${e(utc(d.to))}.</p>`);
    out.push('<h3>Checks that did not pass</h3>');
    if (d.checks.length === 0) out.push('<p class="ok checks-none">Every check passed (or did not apply) on every device.</p>');
    else {
      out.push('<table class="t checks"><thead><tr><th scope="col">check</th><th scope="col">fail</th><th scope="col">timeout</th><th scope="col">crash</th><th scope="col">host error</th><th scope="col">warn</th></tr></thead><tbody>');
      for (const k of d.checks) {
        const cell = (x: number, cls: string, bad: boolean): string => `<td class="num ${cls}${x === 0 ? ' zero' : bad ? ' bad' : ''}">${x}</td>`;
        out.push(`<tr class="check" data-check="${e(k.id)}"><th scope="row"><code>${e(k.id)}</code></th>${cell(k.fail, 'fail', true)}${cell(k.timeout, 'timeout', true)}${cell(k.crash, 'crash', true)}${cell(k.error, 'error', true)}${cell(k.warn, 'warn', false)}</tr>`);
      }
      out.push('</tbody></table>');
    }
    if (d.against) {
      out.push(`<h3>Regressed devices against ${e(`${d.dname} ${d.against.dver}`)}</h3>`, '<div class="regressions">', regressedList(d.against.comparison), '</div>');
    }
    out.push('</section>');
  });
  return htmlPage({ title, style: CSS, body: out });
}
