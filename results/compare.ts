// compare OLD.json NEW.json: per device and check, what got worse (regression), better (fix), stayed, appeared
// (new) or went (missing); known failures of the expectations file are `expected`, not regressions. The baseline
// gate (`run --baseline`) uses gate(), which re-runs a flaky-looking regression once before it counts.
//
// The rules (README "compare"; deqp-runner's order of severity):
// - Devices are matched by backend, PCI bus id and name, never by index or id (cuda:0 may be another GPU after a
//   driver upgrade or with CUDA_VISIBLE_DEVICES); when both files are merged (every device carries `host`),
//   by hostname too. Two devices with the same key in one file are told apart by their order (#2, #3...).
// - Check statuses rise in severity pass < warn < fail < timeout < crash. A status that rose is a regression,
//   one that fell a fix, the same unchanged.
// - `skip` (the check did not apply) is no result: it compares as if the check were absent. A check with no
//   result in OLD (absent or skip) is `new` in NEW, except that a new result of fail, timeout or crash is a
//   regression ("new failure"): the baseline never accepted it. A check with a result in OLD and none in NEW
//   (absent or skip) is `missing`. A device only in NEW is `new` and its checks follow the same rule (a new
//   device's failing check is a regression); a device only in OLD is `missing`.
// - The device's verdict is compared as the entry `verdict`: leaving Usable is a regression, and so is a refusal
//   that appeared (or changed to another refusal); becoming Usable is a fix; any other change is `changed`.
// - A regression covered by a `fail` entry of the expectations is `expected`. One covered by a `flake` entry
//   stays a regression in compare (a file cannot be re-run) and is marked "known flake"; gate() re-runs it.
import { type CheckStatus, FAILING, isRanked, SEVERITY } from './status.js';
import { findExpectation, type Expectations } from './expectations.js';
import type { CheckResult, DeviceWithHost, RunResult } from './types.js';

export type ChangeKind = 'regression' | 'error' | 'fix' | 'unchanged' | 'new' | 'missing' | 'expected' | 'flaky' | 'changed';
export const CHANGE_KINDS: readonly ChangeKind[] = ['regression', 'error', 'expected', 'flaky', 'fix', 'changed', 'new', 'missing', 'unchanged'];

export { SEVERITY } from './status.js';

/** The id under which the device's verdict is compared (and matched by the expectations). */
export const VERDICT_CHECK = 'verdict';

export interface Change {
  kind: ChangeKind;
  /** The check id, or `verdict` for the device's verdict. */
  check: string;
  /** The status (or verdict) in OLD and NEW; absent where that file has none. */
  old?: string;
  new?: string;
  /** One line: `hazard.tmpfs_bytes pass -> fail`, `verdict Usable -> Refused (Wrong_bytes)`. */
  summary: string;
  /** What NEW observed (or its message), shortened, for a regression or an expected failure. */
  detail?: string;
  /** Why it is classed so: "new failure", "known failure (file:3)", "known flake (file:5)", "flaky, passed on re-run". */
  note?: string;
  /** The gate's re-run of the check, when it re-ran it. */
  rerun?: { status: CheckStatus; observed?: string; verdict?: string };
}

export type Counts = Record<ChangeKind, number>;

export interface DeviceComparison {
  /** What matched the two files' devices: [hostname/]backend/pciBusId/name[#n]. */
  key: string;
  /** The hostname of a merged file's device (only when both files are merged). */
  host?: string;
  backend: string;
  name: string;
  pciBusId: string | null;
  /** In both files, only in NEW, or only in OLD. */
  presence: 'both' | 'new' | 'missing';
  id: { old?: string; new?: string };
  /** Driver name and version, e.g. `HIP 7.2.4000`. */
  driver: { old?: string; new?: string };
  verdict: { old?: string; new?: string };
  /** The verdict entry first, then every check (unchanged ones too), in NEW's order then OLD's. */
  changes: Change[];
  counts: Counts;
}

export interface FileSummary {
  hostname: string;
  startedAt: string;
  finishedAt: string;
  tool: string;
  devices: number;
  /** The run was interrupted: checks it did not reach show as missing. */
  incomplete?: boolean;
}

export interface Comparison {
  old: FileSummary;
  new: FileSummary;
  /** Both files were merged: devices were matched with their hostname. */
  matchedByHost: boolean;
  /** The expectations file used, if any. */
  expectations?: string;
  devices: DeviceComparison[];
  counts: Counts;
}

const zero = (): Counts => ({ regression: 0, error: 0, fix: 0, unchanged: 0, new: 0, missing: 0, expected: 0, flaky: 0, changed: 0 });

const short = (s: string | undefined, n = 120): string | undefined => {
  if (s === undefined) return undefined;
  const one = s.replace(/\s+/g, ' ').trim();
  return one.length > n ? `${one.slice(0, n - 1)}…` : one;
};

/** `Usable`, `Refused (Wrong_bytes)`: the verdict's kind and refusal, without the reason. */
export function verdictLabel(v: { kind: string; refusal?: string }): string {
  return v.refusal ? `${v.kind} (${v.refusal})` : v.kind;
}

const driverLabel = (d: DeviceWithHost): string => `${d.driver.name} ${d.driver.version}`;

/** Every device of both files carries `host` (the files are merged). */
const isMerged = (r: RunResult): boolean => r.devices.length > 0 && r.devices.every((d) => (d as DeviceWithHost).host !== undefined);

/** The devices of a file by key; a repeated key gets #2, #3... in the file's order. */
function keyed(r: RunResult, withHost: boolean): Map<string, DeviceWithHost> {
  const out = new Map<string, DeviceWithHost>();
  for (const d of r.devices as DeviceWithHost[]) {
    const base = [...(withHost ? [d.host?.hostname ?? r.host.hostname] : []), d.backend, d.pciBusId ?? '-', d.name].join('/');
    let key = base;
    for (let n = 2; out.has(key); n++) key = `${base}#${n}`;
    out.set(key, d);
  }
  return out;
}

/** Old and new result of one check, classed by the rules above (expectations not yet applied). */
function classify(o: { status: CheckStatus } | undefined, n: { status: CheckStatus } | undefined): { kind: ChangeKind; note?: string } {
  // the host failed the check in NEW: no judgement of the driver either way, and the gate cannot pass on it
  if (n?.status === 'error') return { kind: 'error', note: 'the host failed the check, not the driver' };
  // `skip` and `error` are no result of the driver's
  const oc = o && isRanked(o.status) ? o.status : undefined;
  const nc = n && isRanked(n.status) ? n.status : undefined;
  if (oc && nc) {
    const d = SEVERITY[nc] - SEVERITY[oc];
    return { kind: d > 0 ? 'regression' : d < 0 ? 'fix' : 'unchanged' };
  }
  if (nc) return FAILING.includes(nc) ? { kind: 'regression', note: 'new failure' } : { kind: 'new' };
  if (oc) return { kind: 'missing' };
  // neither has a result: both skip (unchanged), or skip on one side and absent on the other
  if (o && n) return { kind: 'unchanged' };
  return { kind: n ? 'new' : 'missing' };
}

function classifyVerdict(o: { kind: string; refusal?: string } | undefined, n: { kind: string; refusal?: string } | undefined): ChangeKind {
  if (!o) return 'new';
  if (!n) return 'missing';
  if (verdictLabel(o) === verdictLabel(n)) return 'unchanged';
  if (o.kind === 'Usable') return 'regression';
  if (n.kind === 'Refused') return 'regression';
  if (n.kind === 'Usable') return 'fix';
  return 'changed';
}

const arrow = (o: string | undefined, n: string | undefined): string => `${o ?? '(none)'} -> ${n ?? '(none)'}`;

interface Pair {
  old?: DeviceWithHost;
  new?: DeviceWithHost;
}

/** Applies the expectations to a change classed as a regression (or notes a fix of a listed failure). */
function withExpectations(ch: Change, device: DeviceWithHost | undefined, hostname: string | undefined, e: Expectations | undefined): Change {
  if (!device || !e) return ch;
  if (ch.kind === 'regression') {
    const fail = findExpectation(e, 'fail', device, ch.check, hostname);
    if (fail) return { ...ch, kind: 'expected', note: `known failure (${fail.source})${ch.note ? `, ${ch.note}` : ''}` };
    const flake = findExpectation(e, 'flake', device, ch.check, hostname);
    if (flake) return { ...ch, note: `known flake (${flake.source})${ch.note ? `, ${ch.note}` : ''}` };
  } else if (ch.kind === 'fix') {
    const fail = findExpectation(e, 'fail', device, ch.check, hostname);
    if (fail) return { ...ch, note: `listed as a known failure (${fail.source}): the entry can go` };
  }
  return ch;
}

function checkChange(check: string, o: CheckResult | undefined, n: CheckResult | undefined): Change {
  const { kind, note } = classify(o, n);
  const ch: Change = { kind, check, summary: `${check} ${arrow(o?.status, n?.status)}` };
  if (o) ch.old = o.status;
  if (n) ch.new = n.status;
  if (note) ch.note = note;
  if (n && (kind === 'regression' || FAILING.includes(n.status) || n.status === 'warn')) {
    const detail = short(n.observed ?? n.message);
    if (detail) ch.detail = detail;
  }
  return ch;
}

function countOf(changes: Change[]): Counts {
  const c = zero();
  for (const ch of changes) c[ch.kind] += 1;
  return c;
}

function compareDevice(key: string, p: Pair, hostname: { old?: string; new?: string }, matchedByHost: boolean, e: Expectations | undefined): DeviceComparison {
  const any = (p.new ?? p.old)!;
  const ov = p.old ? verdictLabel(p.old.verdict) : undefined;
  const nv = p.new ? verdictLabel(p.new.verdict) : undefined;
  const changes: Change[] = [];
  const verdict: Change = { kind: classifyVerdict(p.old?.verdict, p.new?.verdict), check: VERDICT_CHECK, summary: `verdict ${arrow(ov, nv)}` };
  if (ov) verdict.old = ov;
  if (nv) verdict.new = nv;
  if (verdict.kind === 'regression' && p.new?.verdict.reason) verdict.detail = short(p.new.verdict.reason)!;
  changes.push(withExpectations(verdict, p.new, hostname.new, e));
  const oldChecks = new Map((p.old?.checks ?? []).map((c) => [c.id, c]));
  const newChecks = new Map((p.new?.checks ?? []).map((c) => [c.id, c]));
  const ids = [...newChecks.keys(), ...[...oldChecks.keys()].filter((id) => !newChecks.has(id))];
  for (const id of ids) changes.push(withExpectations(checkChange(id, oldChecks.get(id), newChecks.get(id)), p.new, hostname.new, e));
  const dc: DeviceComparison = {
    key,
    backend: any.backend,
    name: any.name,
    pciBusId: any.pciBusId,
    presence: p.old && p.new ? 'both' : p.new ? 'new' : 'missing',
    id: { ...(p.old ? { old: p.old.id } : {}), ...(p.new ? { new: p.new.id } : {}) },
    driver: { ...(p.old ? { old: driverLabel(p.old) } : {}), ...(p.new ? { new: driverLabel(p.new) } : {}) },
    verdict: { ...(ov ? { old: ov } : {}), ...(nv ? { new: nv } : {}) },
    changes,
    counts: countOf(changes),
  };
  if (matchedByHost && any.host) dc.host = any.host.hostname;
  return dc;
}

function summary(r: RunResult): FileSummary {
  return { hostname: r.host.hostname, startedAt: r.startedAt, finishedAt: r.finishedAt, tool: `${r.tool.name} ${r.tool.version}`, devices: r.devices.length, ...(r.incomplete ? { incomplete: true } : {}) };
}

function pairs(old: RunResult, neu: RunResult): { matchedByHost: boolean; pairs: [string, Pair][] } {
  const matchedByHost = isMerged(old) && isMerged(neu);
  const o = keyed(old, matchedByHost);
  const n = keyed(neu, matchedByHost);
  const out: [string, Pair][] = [];
  for (const [k, d] of n) out.push([k, { new: d, ...(o.has(k) ? { old: o.get(k)! } : {}) }]);
  for (const [k, d] of o) if (!n.has(k)) out.push([k, { old: d }]);
  return { matchedByHost, pairs: out };
}

function total(devices: DeviceComparison[]): Counts {
  const c = zero();
  for (const d of devices) for (const k of CHANGE_KINDS) c[k] += d.counts[k];
  return c;
}

/** Compares two results files' contents (see the rules at the top of this file). */
export function compareResults(old: RunResult, neu: RunResult, expectations?: Expectations): Comparison {
  const { matchedByHost, pairs: ps } = pairs(old, neu);
  const devices = ps.map(([key, p]) =>
    compareDevice(key, p, { ...(p.old ? { old: p.old.host?.hostname ?? old.host.hostname } : {}), ...(p.new ? { new: p.new.host?.hostname ?? neu.host.hostname } : {}) }, matchedByHost, expectations),
  );
  return { old: summary(old), new: summary(neu), matchedByHost, ...(expectations ? { expectations: expectations.file } : {}), devices, counts: total(devices) };
}

/** There is at least one regression (expected failures and flakes that passed on re-run are not). */
export function hasRegression(c: Comparison): boolean {
  return c.counts.regression > 0;
}

/** The command's exit status for a comparison: 1 when there is a regression, else 0. */
export function exitStatus(c: Comparison): 0 | 1 {
  return hasRegression(c) ? 1 : 0;
}

/** Re-runs one check of one device of the NEW run (by its id in that run); undefined when it could not. */
export type Rerun = (deviceId: string, checkId: string) => Promise<CheckResult | undefined>;

/**
 * The baseline gate: compare, then re-run once each regression that may be a flake before it counts, and use the
 * re-run's result if it no longer regresses (kind `flaky`, note "flaky, passed on re-run"). Re-run are:
 * a check covered by a `flake` entry; any `timing.*` check; and, when NEW's verdict is Too_slow (a timing
 * result), the verdict and probe.verdict, both answered by one re-run of probe.verdict (its data.verdict).
 * Each check of a device is re-run at most once, one at a time (timings want a quiet machine). A re-run that
 * still regresses, or that could not run, leaves the regression, its note saying what the re-run gave.
 */
export async function gate(old: RunResult, neu: RunResult, expectations: Expectations | undefined, rerun: Rerun): Promise<Comparison> {
  const c = compareResults(old, neu, expectations);
  const { pairs: ps } = pairs(old, neu);
  const byKey = new Map(ps);
  const cache = new Map<string, Promise<CheckResult | undefined>>();
  const once = (deviceId: string, checkId: string): Promise<CheckResult | undefined> => {
    const k = `${deviceId}\u0000${checkId}`;
    let p = cache.get(k);
    if (!p) {
      p = rerun(deviceId, checkId).catch(() => undefined);
      cache.set(k, p);
    }
    return p;
  };
  for (const d of c.devices) {
    const p = byKey.get(d.key);
    if (!p?.new) continue;
    const tooSlow = p.new.verdict.kind === 'Too_slow';
    for (let i = 0; i < d.changes.length; i++) {
      const ch = d.changes[i]!;
      if (ch.kind !== 'regression') continue;
      const flake = ch.note?.startsWith('known flake') ?? false;
      if (ch.check === VERDICT_CHECK) {
        if (!tooSlow) continue;
        const r = await once(p.new.id, 'probe.verdict');
        const v = (r?.data as { verdict?: { kind: string; refusal?: string } } | undefined)?.verdict;
        const again = v ? classifyVerdict(p.old?.verdict, v) : 'regression';
        const rerunInfo = r ? { status: r.status, ...(v ? { verdict: verdictLabel(v) } : {}) } : undefined;
        d.changes[i] = again === 'regression' || !v
          ? { ...ch, note: `${ch.note ? `${ch.note}, ` : ''}${r ? `re-run: ${v ? verdictLabel(v) : r.status}` : 'could not be re-run'}`, ...(rerunInfo ? { rerun: rerunInfo } : {}) }
          : { ...ch, kind: 'flaky', note: 'flaky, passed on re-run', rerun: rerunInfo! };
        continue;
      }
      if (!(flake || ch.check.startsWith('timing.') || (tooSlow && ch.check === 'probe.verdict'))) continue;
      const r = await once(p.new.id, ch.check);
      const oldCheck = p.old?.checks.find((x) => x.id === ch.check);
      // a re-run that skipped proves nothing
      const again = r && r.status !== 'skip' ? classify(oldCheck, r).kind : 'regression';
      const rerunInfo = r ? { status: r.status, ...(r.observed ? { observed: short(r.observed)! } : {}) } : undefined;
      d.changes[i] = again === 'regression'
        ? { ...ch, note: `${ch.note ? `${ch.note}, ` : ''}${r ? `re-run: ${r.status}` : 'could not be re-run'}`, ...(rerunInfo ? { rerun: rerunInfo } : {}) }
        : { ...ch, kind: 'flaky', note: 'flaky, passed on re-run', rerun: rerunInfo! };
    }
    d.counts = countOf(d.changes);
  }
  c.counts = total(c.devices);
  return c;
}

// ---------------------------------------------------------------------------------------------------------------
// The readable form.

function table(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((cell, i) => cell.padEnd(widths[i]!)).join('  ').trimEnd());
}

const deviceLabel = (d: DeviceComparison): string => {
  const id = d.id.new && d.id.old && d.id.new !== d.id.old ? `${d.id.new} (was ${d.id.old})` : (d.id.new ?? d.id.old)!;
  return `${d.host ? `${d.host} ` : ''}${id} ${d.name}`;
};

const driverChange = (d: DeviceComparison): string => {
  const { old: o, new: n } = d.driver;
  if (o === undefined || n === undefined) return arrow(o, n);
  if (o === n) return o;
  const oName = o.split(' ')[0];
  const nWords = n.split(' ');
  return oName === nWords[0] ? `${o} -> ${nWords.slice(1).join(' ')}` : `${o} -> ${n}`;
};

const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

/** Totals on one line: `1 regression, 5 fixes, 0 new, 0 missing, 30 unchanged`. */
export function countsLine(c: Counts): string {
  const parts = [plural(c.regression, 'regression'), plural(c.fix, 'fix', 'fixes')];
  if (c.expected) parts.push(`${c.expected} expected`);
  if (c.flaky) parts.push(`${c.flaky} flaky`);
  if (c.changed) parts.push(`${c.changed} changed`);
  parts.push(`${c.new} new`, `${c.missing} missing`, `${c.unchanged} unchanged`);
  return parts.join(', ');
}

const LINE_KIND: Record<ChangeKind, string> = {
  regression: 'REGRESSION',
  error: 'HOST ERROR',
  expected: 'expected',
  flaky: 'flaky',
  fix: 'fix',
  changed: 'changed',
  new: 'new',
  missing: 'missing',
  unchanged: 'unchanged',
};

/**
 * The comparison as a table (a row per device: driver old -> new, verdict, counts), then, per device, a line for
 * each change that is not `unchanged` (regressions first), then the totals. `labels` names the two files.
 */
export function formatComparison(c: Comparison, labels?: { old: string; new: string }): string {
  const out: string[] = [];
  const head = (which: 'old' | 'new'): string => {
    const s = c[which];
    return `${which === 'old' ? 'OLD' : 'NEW'}: ${labels ? `${labels[which]} ` : ''}(${s.hostname}, ${s.startedAt}, ${s.tool}, ${plural(s.devices, 'device')}${s.incomplete ? ', INCOMPLETE: interrupted' : ''})`;
  };
  out.push(head('old'), head('new'));
  if (c.expectations) out.push(`expectations: ${c.expectations}`);
  if (c.matchedByHost) out.push('devices matched by host, backend, PCI bus id and name');
  out.push('');
  const rows = [['device', 'pci', 'driver', 'verdict', 'regr', 'fix', 'new', 'missing', 'unchanged']];
  for (const d of c.devices) {
    const verdict = d.verdict.old === d.verdict.new ? d.verdict.new! : arrow(d.verdict.old, d.verdict.new);
    const presence = d.presence === 'both' ? '' : d.presence === 'new' ? ' [new device]' : ' [missing device]';
    rows.push([`${deviceLabel(d)}${presence}`, d.pciBusId ?? '-', driverChange(d), verdict, String(d.counts.regression), String(d.counts.fix), String(d.counts.new), String(d.counts.missing), String(d.counts.unchanged)]);
  }
  out.push(...table(rows));
  for (const d of c.devices) {
    const shown = d.changes
      .filter((ch) => ch.kind !== 'unchanged' && !(d.presence !== 'both' && (ch.kind === 'new' || ch.kind === 'missing')))
      .sort((a, b) => CHANGE_KINDS.indexOf(a.kind) - CHANGE_KINDS.indexOf(b.kind));
    if (shown.length === 0 && d.presence === 'both') continue;
    out.push('', `${deviceLabel(d)} (${d.pciBusId ?? 'no PCI bus id'}), driver ${driverChange(d)}`);
    if (d.presence === 'new') out.push(`  new device: ${plural(d.changes.length - 1, 'check')}, not in OLD`);
    if (d.presence === 'missing') out.push(`  missing device: ${plural(d.changes.length - 1, 'check')} in OLD, the device is not in NEW`);
    const rowsD = shown.map((ch) => [`  ${LINE_KIND[ch.kind]}`, ch.check, arrow(ch.old, ch.new), [ch.note, ch.detail].filter(Boolean).join(': ')]);
    if (rowsD.length) out.push(...table(rowsD));
    if (d.presence === 'both') out.push(`  ${d.counts.unchanged} unchanged`);
  }
  out.push('', `${countsLine(c.counts)}: ${hasRegression(c) ? 'REGRESSION' : 'no regression'}`);
  return `${out.join('\n')}\n`;
}

/** The comparison as JSON (the `--json` form), with a `format` tag so that readers can tell it from a results file. */
export function comparisonJson(c: Comparison): string {
  return `${JSON.stringify({ format: 'mapped-reg-conformance comparison', version: 1, regression: hasRegression(c), ...c }, null, 2)}\n`;
}
