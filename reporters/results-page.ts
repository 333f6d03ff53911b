// The results page (`report FILE.json... --html OUT.html`): one self-contained HTML page from several runs'
// JSON results. A table of every device x driver version (verdict, check counts, failing checks), then, per
// device, hand-written inline SVG charts of the registered and staged GB/s across driver versions and of their
// ratio. The page's shell, what it may load and its escaping are reporters/html-page.ts's.
//
// Devices are told apart by backend, name and PCI bus id (the device id when there is none, as for CPU
// devices), and by host name when the results come from several hosts. Driver versions are ordered naturally
// (13.0 < 13.1, 7.2.4 < 7.2.10), runs of the same version by their start time. Every number drawn in a chart is
// written beside it as text with 2 decimals. All text from results (device names come from drivers) is escaped.
// Older result files lack fields (verdict.text, backends, timing.ratio...): what is missing is shown as '-'.
//
// Regressions are marked where they happen: each run of a device is compared with the run before it (in the
// table's order) by compare's rules (results/compare.ts): a check whose status got more severe, a verdict that
// left Usable, a registered GB/s that fell by more than the allowed drop (the run's gate's, else 10%) are marked
// in the table and on the chart's point; a figure that fell on a machine that was busy is marked "not judged: the
// machine was busy" (the host's, never green and never a regression). A run that recorded its gate shows its PASS or FAIL. With many runs the
// charts narrow their bands, and open scrolled to their right end: the newest runs are seen first.
import { bandwidthChange, classify, classifyVerdict, DEFAULT_MAX_DROP, registrationChange, verdictLabel } from '../results/compare.js';
import { BACKENDS, type CheckResult, type DeviceResult, type RunResult } from '../results/types.js';
import { CHECK_STATUSES as STATUSES, FAILING } from '../results/status.js';
import { twoDecimals as fixed } from '../results/format.js';
import { compareVersions } from '../results/versions.js';
import { escapeHtml, htmlPage, utcMinute } from './html-page.js';

type Status = CheckResult['status'];
/** More runs of a device than this and its charts narrow their bands (and tilt their labels). */
const COMPACT_AFTER = 12;

const finite = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x);
const str = (x: unknown, fallback: string): string => (typeof x === 'string' && x !== '' ? x : fallback);

/** One device in one run: a row of the table, a point of the charts. */
interface Entry {
  run: RunResult;
  device: DeviceResult;
  driverName: string;
  version: string;
  startedAt: string;
  time: number;
  registered?: number;
  staged?: number;
  ratio?: number;
  /** The control copy, and registered / page-locked (schemaVersion 2). */
  pageLocked?: number;
  pageLockedRatio?: number;
  minRelativeSpeed?: number;
  counts: Record<Status, number>;
  failing: { id: string; status: Status }[];
  /** What got worse since the run before it (in the table's order), if anything. */
  regressed?: Regressed;
  /** A figure that fell against the run before it on a machine that was busy: not judged (the host's), and why. */
  notJudged?: { figure: string; text: string };
}

interface Regressed {
  checks: { id: string; old: string; new: string }[];
  verdict?: { old: string; new: string };
  figure?: { old: number; new: number; drop: number; maxDrop: number };
}

interface Group {
  key: string;
  name: string;
  backend: string;
  where: string;
  host: string;
  entries: Entry[];
}

function entryOf(run: RunResult, d: DeviceResult): Entry {
  const checks: Partial<CheckResult>[] = Array.isArray(d.checks) ? d.checks : [];
  const counts = Object.fromEntries(STATUSES.map((s) => [s, 0])) as Record<Status, number>;
  const failing: Entry['failing'] = [];
  for (const c of checks) {
    const s = c.status as Status;
    if (STATUSES.includes(s)) counts[s]++;
    if (FAILING.includes(s) || s === 'error') failing.push({ id: str(c.id, '(no id)'), status: s });
  }
  const t = (d.timing ?? {}) as Partial<NonNullable<DeviceResult['timing']>>;
  const registered = finite(t.registeredGBps) ? t.registeredGBps : undefined;
  const staged = finite(t.stagedGBps) ? t.stagedGBps : undefined;
  // older files may lack the ratio: it is then the quotient of the two speeds
  const ratio = finite(t.ratio) ? t.ratio : registered !== undefined && staged !== undefined && staged > 0 ? registered / staged : undefined;
  const startedAt = str(run.startedAt, '');
  const time = Date.parse(startedAt);
  return {
    run,
    device: d,
    driverName: str(d.driver?.name, ''),
    version: str(d.driver?.version, 'unknown'),
    startedAt,
    time: Number.isNaN(time) ? 0 : time,
    ...(registered !== undefined ? { registered } : {}),
    ...(staged !== undefined ? { staged } : {}),
    ...(ratio !== undefined ? { ratio } : {}),
    ...(finite(t.pageLockedGBps) ? { pageLocked: t.pageLockedGBps } : {}),
    ...(finite(t.pageLockedRatio) ? { pageLockedRatio: t.pageLockedRatio } : {}),
    ...(finite(t.minRelativeSpeed) ? { minRelativeSpeed: t.minRelativeSpeed } : {}),
    counts,
    failing,
  };
}

function byVersionThenTime(a: Entry, b: Entry): number {
  return compareVersions(a.version, b.version) || a.time - b.time || (a.startedAt < b.startedAt ? -1 : a.startedAt > b.startedAt ? 1 : 0);
}

/** The devices of all runs, each with its entries in version order. */
function groupDevices(results: RunResult[]): { groups: Group[]; hosts: string[] } {
  const hosts = [...new Set(results.map((r) => str(r.host?.hostname, 'unknown host')))];
  const several = hosts.length > 1;
  const groups = new Map<string, Group>();
  for (const run of results) {
    const host = str(run.host?.hostname, 'unknown host');
    for (const d of Array.isArray(run.devices) ? run.devices : []) {
      const name = str(d.name, '(no name)');
      const backend = str(d.backend, '?');
      const where = str(d.pciBusId, str(d.id, '?'));
      const key = JSON.stringify([several ? host : '', backend, name, where]);
      let g = groups.get(key);
      if (!g) {
        g = { key, name, backend, where, host: several ? host : '', entries: [] };
        groups.set(key, g);
      }
      g.entries.push(entryOf(run, d));
    }
  }
  const list = [...groups.values()];
  for (const g of list) {
    g.entries.sort(byVersionThenTime);
    g.entries.forEach((e, i) => {
      const r = i > 0 ? regressedSince(g.entries[i - 1]!, e) : undefined;
      if (r) e.regressed = r;
      const busy = i > 0 ? notJudgedSince(g.entries[i - 1]!, e) : undefined;
      if (busy) e.notJudged = busy;
    });
  }
  const backendOrder: readonly string[] = BACKENDS;
  const rank = (b: string): number => (backendOrder.includes(b) ? backendOrder.indexOf(b) : backendOrder.length);
  list.sort((a, b) => a.host.localeCompare(b.host) || rank(a.backend) - rank(b.backend) || a.name.localeCompare(b.name) || a.where.localeCompare(b.where));
  return { groups: list, hosts };
}

/** What got worse from one run of a device to the next, by compare's rules; undefined when nothing did. */
function regressedSince(before: Entry, after: Entry): Regressed | undefined {
  const oldChecks = new Map((Array.isArray(before.device.checks) ? before.device.checks : []).map((c) => [c.id, c]));
  const checks: Regressed['checks'] = [];
  for (const c of Array.isArray(after.device.checks) ? after.device.checks : []) {
    const o = oldChecks.get(c.id);
    if (classify(o, c).kind === 'regression') checks.push({ id: str(c.id, '(no id)'), old: o ? o.status : '(none)', new: c.status });
  }
  const ov = before.device.verdict;
  const nv = after.device.verdict;
  const verdict = ov && nv && classifyVerdict(ov, nv) === 'regression' ? { old: verdictLabel(ov), new: verdictLabel(nv) } : undefined;
  const maxDrop = after.run.gate?.maxDrop ?? DEFAULT_MAX_DROP;
  const bw = before.registered !== undefined && after.registered !== undefined ? bandwidthChange(before.device, after.device, maxDrop) : undefined;
  const figure = bw?.kind === 'regression' && bw.figures ? { old: bw.figures.old, new: bw.figures.new, drop: bw.figures.drop, maxDrop } : undefined;
  if (checks.length === 0 && !verdict && !figure) return undefined;
  return { checks, ...(verdict ? { verdict } : {}), ...(figure ? { figure } : {}) };
}

/**
 * A figure (registered GB/s, registered / page-locked) that fell from one run of a device to the next by more than
 * the allowed drop on a machine that was busy: compare's rules do not judge it (the host's); undefined otherwise.
 */
function notJudgedSince(before: Entry, after: Entry): Entry['notJudged'] {
  const maxDrop = after.run.gate?.maxDrop ?? DEFAULT_MAX_DROP;
  const bw = before.registered !== undefined && after.registered !== undefined ? bandwidthChange(before.device, after.device, maxDrop) : undefined;
  const ratio = registrationChange(before.device, after.device, maxDrop);
  const busy = [bw, ratio].find((ch) => ch?.kind === 'error');
  if (!busy) return undefined;
  return { figure: busy === bw ? 'registered GB/s' : 'registered / page-locked', text: `${busy.summary}: not judged: ${busy.note ?? 'the machine was busy'}` };
}

const pct = (x: number): string => `${(x * 100).toFixed(1)}%`;

function verdictClass(kind: string | undefined): string {
  switch (kind) {
    case 'Usable':
      return 'good';
    case 'Not_needed':
      return 'neutral';
    case 'Too_slow':
    case 'Inconclusive':
      return 'warn';
    case 'Refused':
    case 'Still_registered':
      return 'bad';
    default:
      return 'neutral';
  }
}

function verdictText(d: DeviceResult): string {
  const v = d.verdict as Partial<DeviceResult['verdict']> | undefined;
  if (!v) return '-';
  if (v.text) return v.text;
  const kind = str(v.kind, '?');
  if (v.refusal) return `${kind} (${v.refusal}${v.reason ? ` (${v.reason})` : ''})`;
  return v.reason ? `${kind} (${v.reason})` : kind;
}

/** The start of a run as `YYYY-MM-DD HH:MM UTC`, or the text as given when it is not a time. */
function when(e: Entry): string {
  if (!e.startedAt) return 'unknown time';
  return utcMinute(e.startedAt);
}

// ---------------------------------------------------------------------------------------------------------
// Charts

interface Series {
  name: string;
  cls: string;
  values: (number | undefined)[];
  /** Per point: why it is marked as a regression (a red ring and its reason as a tooltip), if it is. */
  regressed?: (string | undefined)[];
}

interface ChartSpec {
  id: string;
  title: string;
  yLabel: string;
  /** Lines of each x label: the driver version, and the run's time where a version has several runs. */
  xLabels: string[][];
  series: Series[];
  /** A dashed limit per point (the ratio chart's minimum relative speed). */
  limit?: { name: string; values: (number | undefined)[] };
}

/** A round step for about `target` ticks up to `max`: 1, 2, 2.5 or 5 times a power of ten. */
function niceStep(max: number, target = 5): number {
  const raw = max / target;
  const p = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}

function decimalsOf(step: number): number {
  for (let d = 0; d < 6; d++) if (Math.abs(Math.round(step * 10 ** d) - step * 10 ** d) < 1e-9) return d;
  return 6;
}

const px = (x: number): string => (Math.round(x * 10) / 10).toString();

/** Where a chart's parts go: its size, its bands, and the scales of x (a run's band) and y (a value). */
interface ChartLayout {
  compact: boolean;
  xLabels: string[][];
  left: number;
  top: number;
  plotW: number;
  plotH: number;
  bandW: number;
  width: number;
  height: number;
  step: number;
  yMax: number;
  x: (i: number) => number;
  y: (v: number) => number;
}

function chartLayout(spec: ChartSpec): ChartLayout {
  const n = spec.xLabels.length;
  // many runs: narrow bands, each label on one tilted line, so that 30 runs fit a screen or two
  const compact = n > COMPACT_AFTER;
  const xLabels = compact ? spec.xLabels.map((l) => [l.join(' · ')]) : spec.xLabels;
  const longest = Math.max(8, ...xLabels.flat().map((l) => l.length));
  const band = compact ? 46 : Math.max(96, Math.ceil(longest * 6.4) + 16);
  const left = 64;
  const right = 20;
  const top = 40;
  const lines = Math.max(1, ...xLabels.map((l) => l.length));
  const bottom = compact ? 24 + Math.ceil(Math.min(longest, 48) * 4.6) : 30 + lines * 14;
  const plotH = 200;
  const legendW = spec.series.reduce((w, s) => w + 40 + s.name.length * 7, 0) + (spec.limit ? 40 + spec.limit.name.length * 7 : 0);
  const plotW = Math.max(band * n, legendW);
  const bandW = plotW / n;
  const all = [...spec.series.flatMap((s) => s.values), ...(spec.limit?.values ?? [])].filter(finite);
  const max = Math.max(0, ...all);
  const step = niceStep(max > 0 ? max * 1.12 : 1);
  const yMax = Math.max(step, Math.ceil((max * 1.12) / step) * step);
  // zero sits a little above the x axis, so that a value's label fits below its point
  const pad = 20;
  return {
    compact,
    xLabels,
    left,
    top,
    plotW,
    plotH,
    bandW,
    width: left + plotW + right,
    height: top + plotH + bottom,
    step,
    yMax,
    x: (i) => left + (i + 0.5) * bandW,
    y: (v) => top + plotH - pad - (v / yMax) * (plotH - pad),
  };
}

/** The chart's <desc>: every point's values as text. */
function chartDesc(spec: ChartSpec): string {
  return spec.xLabels
    .map((l, i) => {
      const vals = spec.series.map((s) => `${s.name} ${fixed(s.values[i])}`);
      const lim = spec.limit?.values[i];
      if (lim !== undefined) vals.push(`${spec.limit!.name} ${fixed(lim)}`);
      return `${l.join(' ')}: ${vals.join(', ')}`;
    })
    .join('; ');
}

/** The grid, the axes and their labels. */
function chartAxes(spec: ChartSpec, c: ChartLayout): string[] {
  const { left, top, plotW, plotH, step, yMax, x, y } = c;
  const out: string[] = [];
  const dec = decimalsOf(step);
  for (let k = 0; k * step <= yMax + step / 1e6; k++) {
    const v = k * step;
    const yy = px(y(v));
    out.push(`<line class="grid" x1="${left}" y1="${yy}" x2="${left + plotW}" y2="${yy}"/>`);
    out.push(`<text class="tick" x="${left - 6}" y="${yy}" text-anchor="end" dominant-baseline="middle">${v.toFixed(dec)}</text>`);
  }
  out.push(`<line class="axis" x1="${left}" y1="${top}" x2="${left}" y2="${top + plotH}"/>`);
  out.push(`<line class="axis" x1="${left}" y1="${top + plotH}" x2="${left + plotW}" y2="${top + plotH}"/>`);
  out.push(
    `<text class="axis-label" x="14" y="${px(top + plotH / 2)}" text-anchor="middle" transform="rotate(-90 14 ${px(top + plotH / 2)})">${escapeHtml(spec.yLabel)}</text>`,
  );
  c.xLabels.forEach((l, i) => {
    out.push(`<line class="axis" x1="${px(x(i))}" y1="${top + plotH}" x2="${px(x(i))}" y2="${top + plotH + 5}"/>`);
    if (c.compact) {
      const ly = top + plotH + 12;
      out.push(`<text class="xlabel" x="${px(x(i))}" y="${ly}" text-anchor="end" transform="rotate(-40 ${px(x(i))} ${ly})">${escapeHtml(l[0]!)}</text>`);
      return;
    }
    l.forEach((line, j) => {
      out.push(`<text class="${j === 0 ? 'xlabel' : 'xlabel sub'}" x="${px(x(i))}" y="${top + plotH + 18 + j * 14}" text-anchor="middle">${escapeHtml(line)}</text>`);
    });
  });
  return out;
}

/** The legend, above the plot: a sample of each series, and of the limit where it has a value. */
function chartLegend(spec: ChartSpec, c: ChartLayout): string[] {
  const out: string[] = [];
  let lx = c.left;
  for (const s of spec.series) {
    out.push(`<line class="line ${s.cls}" x1="${lx}" y1="16" x2="${lx + 22}" y2="16"/><circle class="point ${s.cls}" cx="${lx + 11}" cy="16" r="3.5"/>`);
    out.push(`<text class="legend" x="${lx + 28}" y="16" dominant-baseline="middle">${escapeHtml(s.name)}</text>`);
    lx += 40 + s.name.length * 7;
  }
  if (spec.limit && spec.limit.values.some(finite)) {
    out.push(`<line class="limit" x1="${lx}" y1="16" x2="${lx + 22}" y2="16"/>`);
    out.push(`<text class="legend" x="${lx + 28}" y="16" dominant-baseline="middle">${escapeHtml(spec.limit.name)}</text>`);
  }
  return out;
}

/** The limit: a dashed line across the bands of the points that share its value, the value written at its right end. */
function chartLimit(spec: ChartSpec, { x, y, bandW }: ChartLayout): string[] {
  const out: string[] = [];
  const lim = spec.limit?.values ?? [];
  for (let i = 0; i < lim.length; ) {
    const v = lim[i];
    let j = i + 1;
    while (j < lim.length && v !== undefined && lim[j] === v) j++;
    if (v !== undefined) {
      const yy = px(y(v));
      const x2 = x(j - 1) + bandW / 2 - 4;
      out.push(`<line class="limit" x1="${px(x(i) - bandW / 2 + 4)}" y1="${yy}" x2="${px(x2)}" y2="${yy}"/>`);
      out.push(`<text class="value limit-value" data-series="limit" data-index="${i}" x="${px(x2 - 2)}" y="${px(y(v) + 13)}" text-anchor="end">${v.toFixed(2)}</text>`);
    }
    i = j;
  }
  return out;
}

/** Each series' line, broken where a run has no value. */
function chartLines(spec: ChartSpec, { x, y }: ChartLayout): string[] {
  const out: string[] = [];
  for (const s of spec.series) {
    let run: string[] = [];
    const flush = (): void => {
      if (run.length > 1) out.push(`<polyline class="line ${s.cls}" points="${run.join(' ')}"/>`);
      run = [];
    };
    s.values.forEach((v, i) => {
      if (v === undefined) flush();
      else run.push(`${px(x(i))},${px(y(v))}`);
    });
    flush();
  }
  return out;
}

/** The points and their values: at each x, the higher value's label above its point, the lower's below. */
function chartPoints(spec: ChartSpec, { x, y, top, plotH }: ChartLayout): string[] {
  const out: string[] = [];
  spec.xLabels.forEach((l, i) => {
    if (spec.series.every((s) => s.values[i] === undefined)) {
      out.push(`<text class="missing" x="${px(x(i))}" y="${px(top + plotH / 2)}" text-anchor="middle">not measured</text>`);
    }
    const here = spec.series.map((s) => ({ s, v: s.values[i] })).filter((p): p is { s: Series; v: number } => p.v !== undefined);
    const highest = Math.max(...here.map((p) => p.v));
    for (const [k, p] of here.entries()) {
      const above = here.length === 1 || (p.v === highest && here.findIndex((q) => q.v === highest) === k);
      const regressed = p.s.regressed?.[i];
      const label = `${p.s.name} at ${l.join(' ')}: ${p.v.toFixed(2)}${regressed ? ` (${regressed})` : ''}`;
      if (regressed) out.push(`<circle class="regressed-ring" data-series="${escapeHtml(p.s.cls)}" data-index="${i}" cx="${px(x(i))}" cy="${px(y(p.v))}" r="8"><title>${escapeHtml(label)}</title></circle>`);
      out.push(`<circle class="point ${p.s.cls}" cx="${px(x(i))}" cy="${px(y(p.v))}" r="4"><title>${escapeHtml(label)}</title></circle>`);
      // above the point; the lower of two below it, or beside it where the axis leaves no room below
      const [tx, ty, anchor] = above ? [x(i), y(p.v) - 9, 'middle'] : y(p.v) + 17 <= top + plotH - 3 ? [x(i), y(p.v) + 17, 'middle'] : [x(i) + 7, y(p.v) - 6, 'start'];
      out.push(
        `<text class="value ${p.s.cls}${regressed ? ' regressed' : ''}" data-series="${escapeHtml(p.s.cls)}" data-index="${i}" x="${px(tx)}" y="${px(ty)}" text-anchor="${anchor}">${p.v.toFixed(2)}</text>`,
      );
    }
  });
  return out;
}

/** One chart as inline SVG: its title and the values as text for a screen reader, then what it draws. */
function chartSvg(spec: ChartSpec): string {
  const c = chartLayout(spec);
  const { width, height } = c;
  const titleId = `${spec.id}-title`;
  const descId = `${spec.id}-desc`;
  return [
    `<svg class="chart" id="${escapeHtml(spec.id)}" role="img" aria-labelledby="${titleId} ${descId}" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">`,
    `<title id="${titleId}">${escapeHtml(spec.title)}</title>`,
    `<desc id="${descId}">${escapeHtml(chartDesc(spec))}</desc>`,
    `<rect class="bg" x="0" y="0" width="${width}" height="${height}"/>`,
    ...chartAxes(spec, c),
    ...chartLegend(spec, c),
    ...chartLimit(spec, c),
    ...chartLines(spec, c),
    ...chartPoints(spec, c),
    '</svg>',
  ].join('\n');
}

// ---------------------------------------------------------------------------------------------------------
// The page

/** The page's own style, after the shell's (reporters/html-page.ts). */
const CSS = `h3 { font-size: 14px; margin: 20px 0 6px; }
p.meta { color: #57606a; margin: 2px 0; }
code { font-family: "DejaVu Sans Mono", "Liberation Mono", monospace; font-size: 12px; }
table.results { border-collapse: collapse; margin-top: 6px; width: 100%; }
table.results th, table.results td { border: 1px solid #d0d7de; padding: 3px 7px; vertical-align: top; text-align: left; }
table.results thead th { background: #f6f8fa; font-weight: 600; vertical-align: bottom; }
table.results tbody th.device { background: #eef2f6; text-align: left; font-weight: 600; padding-top: 5px; }
table.results .small { color: #57606a; font-weight: normal; font-size: 12px; }
table.results td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.results td.count { text-align: right; font-variant-numeric: tabular-nums; color: #8c959f; }
table.results td.count.nonzero { color: #1b1f24; font-weight: 600; }
table.results td.count.nonzero.s-fail, table.results td.count.nonzero.s-timeout, table.results td.count.nonzero.s-crash { background: #ffebe9; color: #a40e26; }
table.results td.count.nonzero.s-warn { background: #fff8c5; color: #7d4e00; }
table.results td.count.nonzero.s-error { background: #ddf4ff; color: #0a3069; }
table.results tr.regressed td.driver { border-left: 4px solid #cf222e; }
table.results td.regressed, table.results .check.regressed { background: #ffebe9; }
.regression-mark { color: #a40e26; font-weight: 600; font-size: 12px; white-space: nowrap; }
table.results tr.busy td.driver { border-left: 4px solid #9a6700; }
table.results td.busy { background: #fff8c5; }
.busy-mark { color: #7d4e00; font-weight: 600; font-size: 12px; }
.gate { font-weight: 600; }
.gate-pass { color: #116329; }
.gate-fail { color: #a40e26; }
table.results td.failing .check { display: block; }
table.results td.failing code { overflow-wrap: anywhere; }
table.results td.verdict { min-width: 170px; max-width: 340px; }
table.results td.driver { min-width: 150px; }
table.results td.run { white-space: nowrap; }
table.results td.failing { min-width: 170px; }
.v-good { color: #116329; font-weight: 600; }
.v-warn { color: #7d4e00; font-weight: 600; }
.v-bad { color: #a40e26; font-weight: 600; }
.v-neutral { color: #424a53; }
.charts { display: flex; flex-wrap: wrap; gap: 16px; }
.chart-box { max-width: 100%; min-width: 0; border: 1px solid #d0d7de; border-radius: 4px; padding: 6px; }
/* a chart wider than the page scrolls, and opens at its right end: the newest runs first */
.chart-box .scroll { overflow-x: auto; max-width: 100%; direction: rtl; }
.chart-box .scroll > svg { direction: ltr; }
.chart-box figcaption { font-weight: 600; margin: 0 0 4px 4px; }
figure { margin: 0; }
svg.chart { display: block; font-family: "DejaVu Sans", "Liberation Sans", Arial, sans-serif; }
svg.chart .bg { fill: #fff; }
svg.chart .grid { stroke: #e6e9ed; stroke-width: 1; }
svg.chart .axis { stroke: #57606a; stroke-width: 1; }
svg.chart .tick, svg.chart .xlabel { font-size: 11px; fill: #424a53; }
svg.chart .xlabel.sub { font-size: 10px; fill: #6e7781; }
svg.chart .axis-label, svg.chart .legend { font-size: 11px; fill: #24292f; }
svg.chart .value { font-size: 11px; font-weight: 600; paint-order: stroke; stroke: #fff; stroke-width: 3px; stroke-linejoin: round; }
svg.chart .missing { font-size: 10px; fill: #8c959f; font-style: italic; }
svg.chart .line { fill: none; stroke-width: 2; }
svg.chart .point { stroke: #fff; stroke-width: 1.5; }
svg.chart .line.registered { stroke: #0969da; }
svg.chart .line.staged { stroke: #bc4c00; }
svg.chart .line.ratio { stroke: #1a7f37; }
svg.chart .point.registered, svg.chart text.registered { fill: #0969da; }
svg.chart .point.staged, svg.chart text.staged { fill: #bc4c00; }
svg.chart .line.locked { stroke: #1a7f37; stroke-dasharray: 4 2; }
svg.chart .point.locked, svg.chart text.locked { fill: #1a7f37; }
svg.chart .point.ratio, svg.chart text.ratio { fill: #1a7f37; }
svg.chart .limit { stroke: #cf222e; stroke-width: 1.5; stroke-dasharray: 5 4; fill: none; }
svg.chart .regressed-ring { fill: none; stroke: #cf222e; stroke-width: 2.5; }
svg.chart text.value.regressed { fill: #cf222e; text-decoration: underline; }
svg.chart text.limit-value { fill: #cf222e; stroke: #fff; stroke-dasharray: none; stroke-width: 3px; font-weight: normal; font-size: 10px; }
`;

/** Where a device is: its backend, PCI bus id (or device id) and, with several hosts, its host, joined by `sep`. */
const placeOf = (g: Group, sep: string): string => [g.backend, g.where, ...(g.host ? [`host ${g.host}`] : [])].join(sep);

/** What the page covers: the runs, hosts, devices, time span and tools; the interrupted runs. */
function pageMeta(results: RunResult[], groups: Group[], hosts: string[]): string[] {
  const times = results.map((r) => str(r.startedAt, '')).filter((t) => !Number.isNaN(Date.parse(t))).sort((a, b) => Date.parse(a) - Date.parse(b));
  const tools = [...new Set(results.map((r) => `${str(r.tool?.name, '?')} ${str(r.tool?.version, '?')}`))];
  const out = [
    `<p class="meta">${results.length} run(s) on ${hosts.length} host(s) (${hosts.map(escapeHtml).join(', ') || 'none'}), ${groups.length} device(s)` +
      (times.length ? `, from ${utcMinute(times[0]!)} to ${utcMinute(times[times.length - 1]!)}` : '') +
      `; written by ${tools.map(escapeHtml).join(', ') || 'an unknown tool'}.</p>`,
  ];
  const incomplete = results.filter((r) => r.incomplete).length;
  if (incomplete) out.push(`<p class="meta"><strong>${incomplete} run(s) were interrupted</strong>: what they did not finish is missing.</p>`);
  return out;
}

/** The failing checks of a row, one a line (broken after a dot or an underscore where an id is longer than the column), with the run's errors. */
function failingCell(e: Entry): string {
  const r = e.regressed;
  const regressedCheck = new Map((r?.checks ?? []).map((c) => [c.id, c]));
  const checkLine = (id: string, status: string): string => {
    const rc = regressedCheck.get(id);
    const mark = rc ? ` <span class="regression-mark">&#9650; was ${escapeHtml(rc.old)}</span>` : '';
    return `<span class="check${rc ? ' regressed' : ''}"><code>${escapeHtml(id).replace(/([._])/g, '$1<wbr>')}</code>${status === 'fail' ? '' : ` (${escapeHtml(status)})`}${mark}</span>`;
  };
  const failing = e.failing.map((f) => checkLine(f.id, f.status));
  // a check that regressed without failing (pass -> warn) is listed too
  for (const c of r?.checks ?? []) if (!e.failing.some((f) => f.id === c.id)) failing.push(checkLine(c.id, c.new));
  const errors = (e.device.errors ?? []).length;
  if (errors) failing.push(`<span class="check">${errors} run error(s)</span>`);
  return `<td class="failing">${failing.join('') || '<span class="small">none</span>'}</td>`;
}

/** One row of the table: a device in one run, what regressed since the run before marked. */
function entryRow(e: Entry, gi: number, ei: number): string[] {
  const d = e.device;
  const r = e.regressed;
  const runNote = [str(d.id, ''), e.run.incomplete || d.incomplete ? 'incomplete' : ''].filter(Boolean).join(' · ');
  const gate = e.run.gate ? `<br><span class="gate gate-${e.run.gate.pass ? 'pass' : 'fail'}" title="${escapeHtml(e.run.gate.headline)}">gate ${e.run.gate.pass ? 'PASS' : 'FAIL'}</span>` : '';
  const was = r?.verdict ? `<br><span class="regression-mark">was ${escapeHtml(r.verdict.old)}</span>` : '';
  const drop = r?.figure ? `<br><span class="regression-mark" title="${escapeHtml(`registered ${fixed(r.figure.old)} -> ${fixed(r.figure.new)} GB/s, more than the ${pct(r.figure.maxDrop)} allowed`)}">&#9660; ${pct(r.figure.drop)}</span>` : '';
  const busy = e.notJudged ? `<br><span class="busy-mark" title="${escapeHtml(e.notJudged.text)}">&#9888; ${escapeHtml(e.notJudged.figure)} not judged: the machine was busy</span>` : '';
  return [
    `<tr class="entry${r ? ' regressed' : ''}${busy ? ' busy' : ''}" data-device="${gi}" data-index="${ei}" data-version="${escapeHtml(e.version)}">`,
    `<td class="driver">${escapeHtml(e.driverName ? `${e.driverName} ${e.version}` : e.version)}${r ? '<br><span class="regression-mark">&#9660; regression</span>' : ''}</td>`,
    `<td class="run small">${escapeHtml(when(e))}<br>${escapeHtml(runNote)}${gate}</td>`,
    `<td class="verdict v-${verdictClass(d.verdict?.kind)}${r?.verdict ? ' regressed' : ''}">${escapeHtml(verdictText(d))}${was}</td>`,
    `<td class="num registered${r?.figure ? ' regressed' : ''}${busy ? ' busy' : ''}">${fixed(e.registered)}${drop}${busy}</td>`,
    `<td class="num staged">${fixed(e.staged)}</td>`,
    `<td class="num ratio">${fixed(e.ratio)}</td>`,
    ...STATUSES.map((s) => `<td class="count s-${s}${e.counts[s] ? ' nonzero' : ''}">${e.counts[s]}</td>`),
    failingCell(e),
    '</tr>',
  ];
}

/** The table of every device x driver version: a row group a device, a row a run. */
function deviceTable(groups: Group[]): string[] {
  const colCount = 7 + STATUSES.length;
  const out = [
    '<h2 id="devices">Devices and driver versions</h2>',
    '<table class="results" aria-label="Verdict, bandwidths and check statuses of each device with each driver version">',
    '<thead><tr><th scope="col">driver</th><th scope="col">run</th><th scope="col">verdict</th>' +
      '<th scope="col">registered<br>GB/s</th><th scope="col">staged<br>GB/s</th><th scope="col">ratio</th>' +
      STATUSES.map((s) => `<th scope="col">${s === 'error' ? 'host<br>error' : s}</th>`).join('') +
      '<th scope="col">failing checks</th></tr></thead>',
  ];
  groups.forEach((g, gi) => {
    out.push(`<tbody class="device" data-device="${gi}">`);
    out.push(`<tr><th class="device" scope="rowgroup" colspan="${colCount}">${escapeHtml(g.name)} <span class="small">${escapeHtml(placeOf(g, ' · '))}</span></th></tr>`);
    g.entries.forEach((e, ei) => out.push(...entryRow(e, gi, ei)));
    out.push('</tbody>');
  });
  out.push('</table>');
  return out;
}

/** A device's two charts: the GB/s of its copies, and their ratios with the minimum relative speed. */
function deviceCharts(g: Group, gi: number): string[] {
  // every run of the device: one that measured nothing is a gap in the lines
  const entries = g.entries;
  const repeated = new Set(entries.map((e) => e.version).filter((v, i, a) => a.indexOf(v) !== i));
  const xLabels = entries.map((e) => {
    const m = /^(.*?)\s*(\(.*\))$/.exec(e.version);
    const lines = m && m[1] ? [m[1], m[2]!] : [e.version];
    if (repeated.has(e.version)) lines.push(when(e));
    return lines;
  });
  const label = `${g.name} (${placeOf(g, ', ')})`;
  const gbps = chartSvg({
    id: `chart-${gi}-gbps`,
    title: `Registered, page-locked and staged copy speed (GB/s) of ${label} across driver versions`,
    yLabel: 'GB/s',
    xLabels,
    series: [
      {
        name: 'registered GB/s',
        cls: 'registered',
        values: entries.map((e) => e.registered),
        regressed: entries.map((e) => (e.regressed?.figure ? `regression: -${pct(e.regressed.figure.drop)} against the run before, more than the ${pct(e.regressed.figure.maxDrop)} allowed` : undefined)),
      },
      { name: 'page-locked GB/s', cls: 'locked', values: entries.map((e) => e.pageLocked) },
      { name: 'staged GB/s', cls: 'staged', values: entries.map((e) => e.staged) },
    ],
  });
  const ratios = chartSvg({
    id: `chart-${gi}-ratio`,
    title: `Ratios of registered to staged and to page-locked speed of ${label} across driver versions`,
    yLabel: 'ratio',
    xLabels,
    series: [
      { name: 'ratio', cls: 'ratio', values: entries.map((e) => e.ratio) },
      { name: 'registered / page-locked', cls: 'locked', values: entries.map((e) => e.pageLockedRatio) },
    ],
    limit: { name: 'min relative speed', values: entries.map((e) => e.minRelativeSpeed) },
  });
  return [
    `<section class="device-charts" data-device="${gi}" aria-label="${escapeHtml(`Charts of ${label}`)}">`,
    `<h3>${escapeHtml(g.name)} <span class="small">${escapeHtml(placeOf(g, ' · '))}</span></h3>`,
    '<div class="charts">',
    ...['<figure class="chart-box">', `<figcaption>Registered, page-locked and staged GB/s</figcaption>`, '<div class="scroll">', gbps, '</div>', '</figure>'],
    ...['<figure class="chart-box">', `<figcaption>Ratios registered / staged and registered / page-locked</figcaption>`, '<div class="scroll">', ratios, '</div>', '</figure>'],
    '</div>',
    '</section>',
  ];
}

/** The charts of every device that measured a bandwidth in some run; the others named in one line. */
function bandwidthCharts(groups: Group[]): string[] {
  const out = [
    '<h2 id="charts">Bandwidth across driver versions</h2>',
    '<p class="meta">Registered: the copy straight from the registered file mapping; staged: through a pinned buffer. Best of the runs of each copy, in GB/s; the ratio is registered over staged, the dashed line the minimum relative speed asked for.</p>',
  ];
  const charted = groups.map((g, gi) => ({ g, gi })).filter(({ g }) => g.entries.some((e) => e.registered !== undefined || e.staged !== undefined || e.ratio !== undefined));
  const uncharted = groups.filter((g) => !charted.some((c) => c.g === g));
  for (const { g, gi } of charted) out.push(...deviceCharts(g, gi));
  if (uncharted.length) {
    out.push(`<p class="meta">No bandwidth was measured in any run for: ${uncharted.map((g) => `${escapeHtml(g.name)} (${escapeHtml(placeOf(g, ', '))})`).join('; ')}.</p>`);
  }
  return out;
}

/** The history of `results` (several runs' JSON results) as one self-contained HTML page. */
export function htmlReport(results: RunResult[], options?: { title?: string }): string {
  const title = options?.title ?? 'mapped-reg-conformance: results across driver versions';
  const { groups, hosts } = groupDevices(results);
  const content = groups.length === 0 ? ['<p>No device in these results.</p>'] : [...deviceTable(groups), ...bandwidthCharts(groups)];
  return htmlPage({ title, style: CSS, body: [...pageMeta(results, groups, hosts), ...content] });
}
