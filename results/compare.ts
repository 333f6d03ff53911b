// compare OLD.json NEW.json: per device and check, what got worse (regression), better (fix), stayed, appeared
// (new) or went (missing); known failures of the expectations file are `expected`, not regressions. The gate
// (results/gate.ts) makes the same comparison of a run against its baseline, or against nothing.
//
// The rules are told once, for users, in docs/gate.md (deqp-runner's order of severity and its expectations);
// each function below applies one of them and says which. In short: devices are matched by backend, PCI bus id
// and name (never by index), a device gone is a regression, a status that rose in severity is one, a verdict
// that left Usable is one, a registered GB/s or registered / page-locked that fell by more than `maxDrop` is one,
// and a regression covered by a `fail` expectation is `expected`.
import { findExpectation, type Expectation, type Expectations } from './expectations.js';
import { type CheckStatus, FAILING, isRanked, SEVERITY } from './status.js';
import type { BandwidthFigures, ChangeKind, CheckResult, DeviceWithHost, NotAskedDevice, RegressionKind, RunResult } from './types.js';
import { checkDetail } from './check-text.js';
import { type DropDecision, type RunFigure, beyond, decideDrop, gbpsLogs, ratioLogs } from './decision.js';
import { gbpsText, oneLine, percent, plural } from './format.js';

export { SEVERITY } from './status.js';
export type { ChangeKind, RegressionKind } from './types.js';
/** In the order the reports list them. */
export const CHANGE_KINDS: readonly ChangeKind[] = ['regression', 'unexpected-pass', 'error', 'expected', 'flaky', 'fix', 'changed', 'new', 'missing', 'unchanged'];
/** The kinds that keep a gate from passing. */
export const FAILING_KINDS: readonly ChangeKind[] = ['regression', 'unexpected-pass', 'error'];

/** The id under which the device's verdict is compared (and matched by the expectations). */
export const VERDICT_CHECK = 'verdict';
/** The id under which the registered copy's GB/s is compared (and matched by the expectations). */
export const BANDWIDTH_CHECK = 'bandwidth';
/** The id under which registered / page-locked is compared (and matched by the expectations). */
export const REGISTRATION_CHECK = 'registration';
/** The drop that is a regression when none is given (docs/gate.md: why 10%). */
export const DEFAULT_MAX_DROP = 0.1;

export interface Change {
  kind: ChangeKind;
  /** The check id, `verdict` for the device's verdict, `bandwidth` for its registered GB/s. */
  check: string;
  /** The status (verdict, figure) in OLD and NEW; absent where that file has none. */
  old?: string;
  new?: string;
  /** One line: `hazard.tmpfs_bytes pass -> fail`, `verdict Usable -> Refused (Wrong_bytes)`. */
  summary: string;
  /** What NEW observed (or its message), for a regression, a failure or a warning: the full text, on one line. */
  detail?: string;
  /** Why it is classed so: "new failure", "known failure (file:3)", "known flake (file:5)", "flaky, passed on re-run". */
  note?: string;
  /** The expectations entry that classed it (expected, unexpected-pass, known flake): where, and the line. */
  expectation?: { source: string; line: string };
  /** The gate's re-run of the check, when it re-ran it. */
  rerun?: { status: CheckStatus; observed?: string; verdict?: string; registeredGBps?: number };
  /** For `bandwidth`: the figures (GB/s) and the drop, a fraction of OLD (negative: a rise). */
  figures?: BandwidthFigures;
  /** For `bandwidth` and `registration`: the decision with the figures' noise (results/decision.ts). */
  decision?: DropDecision;
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
  /** The verdict entry first, the bandwidth entry where either side has a figure, then every check (unchanged ones too), in NEW's order then OLD's. */
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
  /** Absent when NEW was judged on its own (the gate with no baseline). */
  old?: FileSummary;
  new: FileSummary;
  /** Both files were merged: devices were matched with their hostname. */
  matchedByHost: boolean;
  /** The expectations file used, if any. */
  expectations?: string;
  /** The largest drop of the registered GB/s that is not a regression (a fraction of OLD's). */
  maxDrop: number;
  devices: DeviceComparison[];
  counts: Counts;
  /**
   * OLD's devices that NEW did not ask for (its --backend or --device left them out): not compared, never
   * missing (`--require` is the way to demand a device). Absent when there are none.
   */
  notAskedFor?: NotAskedDevice[];
}

export interface CompareOptions {
  expectations?: Expectations;
  /** Default DEFAULT_MAX_DROP. */
  maxDrop?: number;
  /**
   * More runs of the baseline (OLD's side) beyond OLD itself: their devices, matched as OLD's are, add their figures
   * (and their spread between runs) to the decision on registered / page-locked and the registered GB/s.
   */
  moreBaselines?: readonly RunResult[];
  /** More runs of NEW's side beyond NEW itself (the history store's earlier runs of the same driver), matched alike. */
  moreCandidates?: readonly RunResult[];
}

/** The other runs of each side of one device, for the figures' decision: beyond OLD's and NEW's own. */
export interface MoreRuns {
  olds?: readonly DeviceWithHost[];
  news?: readonly DeviceWithHost[];
}

/** One device's registered / page-locked as the decision takes it: its rounds' pairs, or its figure alone. */
function ratioFigure(d: DeviceWithHost): RunFigure {
  const t = d.timing;
  const s = t?.samples;
  return { ...(s ? { logs: ratioLogs(s.registeredMs.map((x) => x ?? NaN), s.pageLockedMs) } : {}), ...(t?.pageLockedRatio !== undefined ? { figure: t.pageLockedRatio } : {}) };
}

/** One device's registered GB/s as the decision takes it: its rounds, or its figure alone. */
function bandwidthFigure(d: DeviceWithHost): RunFigure {
  const t = d.timing;
  const s = t?.samples;
  return { ...(s && t?.bytes ? { logs: gbpsLogs(t.bytes, s.registeredMs) } : {}), ...(t ? { figure: t.registeredGBps } : {}) };
}

/** The decision on one figure of a device, OLD's runs against NEW's (results/decision.ts). */
function figureDecision(o: DeviceWithHost, n: DeviceWithHost, of: (d: DeviceWithHost) => RunFigure, maxDrop: number, more: MoreRuns | undefined): DropDecision | undefined {
  return decideDrop({ baseline: [o, ...(more?.olds ?? [])].map(of), candidate: [n, ...(more?.news ?? [])].map(of), maxDrop });
}

/** The noise a regression was judged with, for its detail; none for figures without their noise. */
const noiseDetail = (d: DropDecision): string | undefined => (d.noiseText ? `judged with its noise: ${d.noiseText}${d.advice ? ` (${d.advice})` : ''}` : undefined);

/** The words of a figure that the host was too noisy to judge: the host's, not the driver's, and not a pass. */
const noisyNote = (d: DropDecision): string => `${d.why}: the host, not the driver${d.advice ? ` (${d.advice})` : ''}`;

const zero = (): Counts => Object.fromEntries(CHANGE_KINDS.map((k) => [k, 0])) as Counts;

/** `s` on one line (whitespace runs as one blank), in full. */
const oneLineOrNone = (s: string | undefined): string | undefined => (s === undefined ? undefined : oneLine(s) || undefined);

/** `Usable`, `Refused (Wrong_bytes)`: the verdict's kind and refusal, without the reason. */
export function verdictLabel(v: { kind: string; refusal?: string }): string {
  return v.refusal ? `${v.kind} (${v.refusal})` : v.kind;
}

const driverLabel = (d: DeviceWithHost): string => `${d.driver.name} ${d.driver.version}`;

/** Every device of both files carries `host` (the files are merged). */
const isMerged = (r: RunResult): boolean => r.devices.length > 0 && r.devices.every((d) => (d as DeviceWithHost).host !== undefined);

/** The key that matches a device across files: [hostname/]backend/pciBusId/name. */
export function deviceKey(d: DeviceWithHost, fileHost: string, withHost: boolean): string {
  return [...(withHost ? [d.host?.hostname ?? fileHost] : []), d.backend, d.pciBusId ?? '-', d.name].join('/');
}

/** The devices of a file by key; a repeated key gets #2, #3... in the file's order. */
function keyed(r: RunResult, withHost: boolean): Map<string, DeviceWithHost> {
  const out = new Map<string, DeviceWithHost>();
  for (const d of r.devices as DeviceWithHost[]) {
    const base = deviceKey(d, r.host.hostname, withHost);
    let key = base;
    for (let n = 2; out.has(key); n++) key = `${base}#${n}`;
    out.set(key, d);
  }
  return out;
}

/**
 * The baseline's other runs (--baseline given more than once), their devices matched as OLD's are (keyed): for each
 * device's key, the same device in each of them. compare and the gate's re-timing judge with the same ones.
 */
export function otherRuns(runs: readonly RunResult[] | undefined, withHost: boolean): (key: string) => DeviceWithHost[] {
  const maps = (runs ?? []).map((r) => keyed(r, withHost));
  return (key) => maps.flatMap((m) => (m.has(key) ? [m.get(key)!] : []));
}

/** Old and new result of one check, classed by the rules above (expectations not yet applied). */
export function classify(o: { status: CheckStatus } | undefined, n: { status: CheckStatus } | undefined): { kind: ChangeKind; note?: string } {
  // the host failed the check in NEW: no judgement of the driver either way, and the gate cannot pass on it
  if (n?.status === 'error') return { kind: 'error', note: 'the host failed the check, not the driver' };
  const oc = o && isRanked(o.status) ? o.status : undefined;
  const nc = n && isRanked(n.status) ? n.status : undefined;
  if (oc && nc) {
    const d = SEVERITY[nc] - SEVERITY[oc];
    return { kind: d > 0 ? 'regression' : d < 0 ? 'fix' : 'unchanged' };
  }
  if (nc) return FAILING.includes(nc) ? { kind: 'regression', note: 'new failure' } : { kind: 'new' };
  if (oc) return { kind: 'missing' };
  // neither has a result: both skip (unchanged), or no result on one side and absent on the other
  if (o && n) return { kind: 'unchanged' };
  return { kind: n ? 'new' : 'missing' };
}

export function classifyVerdict(o: { kind: string; refusal?: string } | undefined, n: { kind: string; refusal?: string } | undefined): ChangeKind {
  if (!o) return 'new';
  if (!n) return 'regression'; // the device is gone
  if (verdictLabel(o) === verdictLabel(n)) return 'unchanged';
  if (o.kind === 'Usable') return 'regression';
  if (n.kind === 'Refused') return 'regression';
  if (n.kind === 'Usable') return 'fix';
  return 'changed';
}

export const arrow = (o: string | undefined, n: string | undefined): string => `${o ?? '(none)'} -> ${n ?? '(none)'}`;

/**
 * Whether the fall from OLD to NEU is more than `maxDrop` (a fraction of OLD): it must pass the limit by more than
 * one part in a billion of OLD, so a fall of exactly the limit is never one, however the division rounds
 * (1 - 1.773 / 1.97 is 0.10000000000000009); no measurement resolves a billionth. A rise is never a fall.
 */
export function exceedsDrop(old: number, neu: number, maxDrop: number): boolean {
  return (old - neu) / old - maxDrop > 1e-9;
}

/** A rise beyond the limit (a fix): the mirror image of a fall, NEW above OLD by more than maxDrop of OLD. */
const beyondRise = (drop: number, maxDrop: number): boolean => beyond(-drop, maxDrop);

const figureText = (x: number | undefined): string | undefined => (x === undefined ? undefined : gbpsText(x));
const signed = (drop: number): string => `${drop > 0 ? '-' : '+'}${percent(Math.abs(drop))}`;

/** What NEW saw of the machine that kept its absolute figures from being judged, on one line. */
export function busyText(n: DeviceWithHost): string {
  const load = n.load;
  const waited = load ? `, still busy after ${(load.waitedForQuietMs / 1000).toFixed(0)} s of --quiet-wait ${load.quietWaitS} (${load.attempts} timing${load.attempts === 1 ? '' : 's'})` : '';
  return `the machine was busy: ${load?.why.join('; ') ?? 'no detail'}${waited}`;
}

/**
 * The registered GB/s of OLD against NEW's, judged against `maxDrop`; undefined when neither has a figure. The
 * absolute figures are judged only when NEW's machine was quiet: a busy one (NEW's `load.busy`) that made them
 * fall is the host's fault, `error` (the host, not the driver); a busy one that did not is no matter (a busy
 * machine only makes a figure lower). A fall on a quiet machine is a regression; whether the control copy fell
 * with it says which: registration alone (the driver) or every host-to-device copy (the driver or the platform).
 */
export function bandwidthChange(o: DeviceWithHost | undefined, n: DeviceWithHost | undefined, maxDrop: number, more?: MoreRuns): Change | undefined {
  const of = o?.timing?.registeredGBps;
  const nf = n?.timing?.registeredGBps;
  if (of === undefined && nf === undefined) return undefined;
  const summaryOf = (kind: ChangeKind, extra = ''): Change => ({
    kind,
    check: BANDWIDTH_CHECK,
    ...(of !== undefined ? { old: gbpsText(of) } : {}),
    ...(nf !== undefined ? { new: gbpsText(nf) } : {}),
    summary: `registered ${arrow(figureText(of), figureText(nf))}${extra}`,
  });
  // no figure on one side: the verdict (and probe.verdict) already say why; a figure is not judged alone
  if (of === undefined || nf === undefined || !(of > 0)) return summaryOf(of === undefined ? 'new' : 'missing');
  const decision = figureDecision(o!, n!, bandwidthFigure, maxDrop, more)!;
  const drop = decision.drop;
  // a rise beyond the limit (a fix) is judged as the mirror image of a fall: NEW above OLD by more than maxDrop of OLD
  const falls = decision.outcome === 'regression';
  const noisy = decision.outcome === 'too-noisy';
  const kind: ChangeKind = falls || noisy ? (n?.load?.busy || noisy ? 'error' : 'regression') : beyondRise(drop, maxDrop) ? 'fix' : 'unchanged';
  const ch = summaryOf(kind, ` (${signed(drop)})`);
  ch.decision = decision;
  const staged = { ...(o?.timing ? { old: o.timing.stagedGBps } : {}), ...(n?.timing ? { new: n.timing.stagedGBps } : {}) };
  const lockedOld = o?.timing?.pageLockedGBps;
  const lockedNew = n?.timing?.pageLockedGBps;
  const pageLocked = { ...(lockedOld !== undefined ? { old: lockedOld } : {}), ...(lockedNew !== undefined ? { new: lockedNew } : {}) };
  ch.figures = { old: of, new: nf, drop, maxDrop, staged, ...(lockedOld !== undefined || lockedNew !== undefined ? { pageLocked } : {}) };
  const lockedText = lockedOld !== undefined && lockedNew !== undefined ? `page-locked ${gbpsText(lockedOld)} -> ${gbpsText(lockedNew)} (${signed(1 - lockedNew / lockedOld)})` : undefined;
  if (kind === 'error') {
    ch.note = n?.load?.busy ? busyText(n!) : noisyNote(decision);
    ch.detail = [`registered ${gbpsText(of)} -> ${gbpsText(nf)} (${signed(drop)})`, lockedText].filter(Boolean).join(', ');
    return ch;
  }
  if (kind === 'regression') {
    const why = decision.why;
    if (lockedText && exceedsDrop(lockedOld!, lockedNew!, maxDrop)) {
      const link = n?.link?.downtrained ? `: the link is ${n.link.text ?? 'trained below its maximum'}` : '';
      ch.note = `${why}: every host-to-device copy got slower (${lockedText}), on a quiet machine: the driver or the platform${link}`;
    } else if (lockedText) {
      ch.note = `${why}: registered copies alone got slower (${lockedText}): the driver's registration`;
    } else {
      ch.note = why;
    }
  }
  const stagedText = staged.old !== undefined && staged.new !== undefined ? `staged ${gbpsText(staged.old)} -> ${gbpsText(staged.new)} (shown, not judged)` : undefined;
  const detail = [stagedText, kind === 'regression' ? noiseDetail(decision) : undefined].filter(Boolean).join('; ');
  if (detail) ch.detail = detail;
  return ch;
}

/**
 * How suites/measure.ts begins the reason it gives for CPU pressure (`load.why`): the one reason that says only
 * that threads waited for a core, which moves no copy of the GPU more than the other.
 */
export const CPU_PRESSURE_REASON = 'CPU pressure';

/**
 * Whether what kept the machine busy may excuse a fall of registered / page-locked: a busy machine for any reason
 * but CPU pressure alone (docs/measurement.md, "CPU pressure alone"). Both copies are timed back to back by the
 * same thread, so threads waiting for a core slow both alike: a user's slower driver on a 2-core machine with other
 * jobs fell by 25% in the ratio whether its CPU pressure was under or over the threshold. The absolute GB/s are
 * still excused by it.
 */
export function excusesRatio(load: DeviceWithHost['load']): boolean {
  // busy with no reason kept (a file edited by hand, a store row with none): not known to be CPU pressure alone
  return load !== undefined && load.busy && !(load.why.length > 0 && load.why.every((w) => w.startsWith(CPU_PRESSURE_REASON)));
}

/**
 * registered / page-locked of OLD against NEW's: a busy machine slows both copies alike (on the H200 the ratio
 * moved by under 2% while 16 host-copy threads, or another process on the link, cut both by 27-52%), so a fall
 * of more than `maxDrop` is a regression of the driver's registration, on a quiet machine, and on one that was
 * busy only for a while. On a machine that stayed busy through --quiet-wait it is the host's (`error`): both loads
 * at once moved the ratio by 23%; but not when CPU pressure alone made it busy (excusesRatio). Undefined when
 * neither side has the figure.
 */
export function registrationChange(o: DeviceWithHost | undefined, n: DeviceWithHost | undefined, maxDrop: number, more?: MoreRuns): Change | undefined {
  const of = o?.timing?.pageLockedRatio;
  const nf = n?.timing?.pageLockedRatio;
  if (of === undefined && nf === undefined) return undefined;
  const text = (x: number | undefined): string | undefined => (x === undefined ? undefined : x.toFixed(3));
  const ch: Change = {
    kind: 'unchanged',
    check: REGISTRATION_CHECK,
    ...(of !== undefined ? { old: text(of)! } : {}),
    ...(nf !== undefined ? { new: text(nf)! } : {}),
    summary: `registered / page-locked ${arrow(text(of), text(nf))}`,
  };
  if (of === undefined || nf === undefined || !(of > 0)) return { ...ch, kind: of === undefined ? 'new' : 'missing' };
  const decision = figureDecision(o!, n!, ratioFigure, maxDrop, more)!;
  const drop = decision.drop;
  ch.summary += ` (${signed(drop)})`;
  ch.decision = decision;
  const falls = decision.outcome === 'regression';
  if (decision.outcome === 'too-noisy') {
    // the host's own spread is wider than the decision needs: not the driver's, and not a pass
    ch.kind = 'error';
    ch.note = noisyNote(decision);
    ch.detail = ch.summary;
  } else if (falls && excusesRatio(n?.load)) {
    // on a machine that stayed busy even this may move: 16 host-copy threads and another process on the link
    // together took the H200's from 0.995 to 0.762; the host's, not the driver's (exit 1 all the same)
    ch.kind = 'error';
    ch.note = busyText(n!);
    ch.detail = ch.summary;
  } else if (falls) {
    ch.kind = 'regression';
    const pressure = n?.load?.busy ? ` (the machine was busy with CPU pressure alone, which slows both copies alike: ${n.load.why.join('; ')})` : '';
    ch.note = `${decision.why}: registered copies got slower than page-locked ones timed beside them: the driver's registration${pressure}`;
    const noise = noiseDetail(decision);
    if (noise) ch.detail = noise;
  } else if (beyondRise(drop, maxDrop)) ch.kind = 'fix';
  return ch;
}

interface Pair {
  old?: DeviceWithHost;
  new?: DeviceWithHost;
}

const cite = (e: Expectation): { source: string; line: string } => ({ source: e.source, line: e.line });

/**
 * Applies the expectations to a change: a regression covered by a `fail` entry is `expected`, one covered by a
 * `flake` entry is marked; a check covered by a `fail` entry that passed or warned in NEW is an unexpected pass.
 */
function withExpectations(ch: Change, device: DeviceWithHost | undefined, hostname: string | undefined, e: Expectations | undefined): Change {
  if (!device || !e) return ch;
  if (ch.kind === 'regression') {
    const fail = findExpectation(e, 'fail', device, ch.check, hostname);
    if (fail) return { ...ch, kind: 'expected', note: `known failure (${fail.source}: ${fail.line})${ch.note ? `, ${ch.note}` : ''}`, expectation: cite(fail) };
    const flake = findExpectation(e, 'flake', device, ch.check, hostname);
    if (flake) return { ...ch, note: `known flake (${flake.source})${ch.note ? `, ${ch.note}` : ''}`, expectation: cite(flake) };
    return ch;
  }
  if (ch.new === 'pass' || ch.new === 'warn' || (ch.check === VERDICT_CHECK && ch.new === 'Usable')) {
    const fail = findExpectation(e, 'fail', device, ch.check, hostname);
    if (fail) return { ...ch, kind: 'unexpected-pass', note: `unexpected pass: listed as a known failure (${fail.source}: ${fail.line}): update the expectations`, expectation: cite(fail) };
  }
  return ch;
}

/** A check's change; with no baseline at all (`baseline` false) a failing check is told as failed, not as "(none) -> fail". */
function checkChange(check: string, o: CheckResult | undefined, n: CheckResult | undefined, baseline = true): Change {
  const { kind, note } = classify(o, n);
  const ch: Change = { kind, check, summary: baseline || !n ? `${check} ${arrow(o?.status, n?.status)}` : `${check} ${n.status}` };
  if (o) ch.old = o.status;
  if (n) ch.new = n.status;
  if (note && (baseline || kind !== 'regression')) ch.note = note;
  if (n && (kind === 'regression' || kind === 'error' || FAILING.includes(n.status) || n.status === 'warn')) {
    // the check's plain words beside its codes, as the terminal tells them (results/check-text.ts)
    const detail = checkDetail(n);
    if (detail) ch.detail = detail;
  }
  return ch;
}

function countOf(changes: Change[]): Counts {
  const c = zero();
  for (const ch of changes) c[ch.kind] += 1;
  return c;
}

function compareDevice(key: string, p: Pair, hostname: { old?: string; new?: string }, matchedByHost: boolean, o: CompareOptions & { maxDrop: number }, baseline: boolean, more?: MoreRuns): DeviceComparison {
  const e = o.expectations;
  const any = (p.new ?? p.old)!;
  const ov = p.old ? verdictLabel(p.old.verdict) : undefined;
  const nv = p.new ? verdictLabel(p.new.verdict) : undefined;
  const changes: Change[] = [];
  const verdict: Change = { kind: classifyVerdict(p.old?.verdict, p.new?.verdict), check: VERDICT_CHECK, summary: `verdict ${arrow(ov, nv)}` };
  if (ov) verdict.old = ov;
  if (nv) verdict.new = nv;
  if (!p.new) verdict.note = 'the device is missing';
  else if (verdict.kind === 'regression' && p.new.verdict.reason) verdict.detail = oneLineOrNone(p.new.verdict.reason)!;
  // a missing device has no NEW side for the expectations to match: its absence is matched against OLD's device
  changes.push(withExpectations(verdict, p.new ?? p.old, p.new ? hostname.new : hostname.old, e));
  const bandwidth = bandwidthChange(p.old, p.new, o.maxDrop, more);
  if (bandwidth) changes.push(withExpectations(bandwidth, p.new, hostname.new, e));
  const registration = registrationChange(p.old, p.new, o.maxDrop, more);
  if (registration) changes.push(withExpectations(registration, p.new, hostname.new, e));
  const oldChecks = new Map((p.old?.checks ?? []).map((c) => [c.id, c]));
  const newChecks = new Map((p.new?.checks ?? []).map((c) => [c.id, c]));
  const ids = [...newChecks.keys(), ...[...oldChecks.keys()].filter((id) => !newChecks.has(id))];
  for (const id of ids) changes.push(withExpectations(checkChange(id, oldChecks.get(id), newChecks.get(id), baseline), p.new, hostname.new, e));
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

export function fileSummary(r: RunResult): FileSummary {
  return { hostname: r.host.hostname, startedAt: r.startedAt, finishedAt: r.finishedAt, tool: `${r.tool.name} ${r.tool.version}`, devices: r.devices.length, ...(r.incomplete ? { incomplete: true } : {}) };
}

function pairs(old: RunResult | undefined, neu: RunResult): { matchedByHost: boolean; pairs: [string, Pair][] } {
  const matchedByHost = old !== undefined && isMerged(old) && isMerged(neu);
  const o = old ? keyed(old, matchedByHost) : new Map<string, DeviceWithHost>();
  const n = keyed(neu, matchedByHost);
  const out: [string, Pair][] = [];
  for (const [k, d] of n) out.push([k, { new: d, ...(o.has(k) ? { old: o.get(k)! } : {}) }]);
  for (const [k, d] of o) if (!n.has(k)) out.push([k, { old: d }]);
  return { matchedByHost, pairs: out };
}

export function totalCounts(devices: readonly DeviceComparison[]): Counts {
  const c = zero();
  for (const d of devices) for (const k of CHANGE_KINDS) c[k] += d.counts[k];
  return c;
}

/** Recounts a device's changes (after the gate's re-runs replaced some). */
export function recount(d: DeviceComparison): void {
  d.counts = countOf(d.changes);
}

/**
 * What a run narrowed by --backend or --device did not ask for, of a device of another run: the options that left
 * it out (`--backend cuda`), or undefined when the run asked for it. A merged file (a fleet's runs) asks for all.
 */
export function notAskedBy(run: RunResult, d: { id: string; backend: string }): string | undefined {
  if (isMerged(run)) return undefined;
  const { backends, devices } = run.options as { backends?: unknown; devices?: unknown };
  const list = (x: unknown): string[] | undefined => (Array.isArray(x) && x.length > 0 && x.every((v) => typeof v === 'string') ? x : undefined);
  const b = list(backends);
  if (b && !b.includes(d.backend)) return b.map((x) => `--backend ${x}`).join(' ');
  const ids = list(devices);
  if (ids && !ids.includes(d.id)) return ids.map((x) => `--device ${x}`).join(' ');
  return undefined;
}

/**
 * Compares two results files' contents (see the rules at the top of this file). With no OLD, NEW is judged on
 * its own: every failing check is a failure (told as failed, with no baseline), and nothing can be missing. A
 * device of OLD that NEW's run did not ask for (notAskedBy) is not compared: listed in `notAskedFor`, never missing.
 */
export function compareResults(old: RunResult | undefined, neu: RunResult, options: CompareOptions = {}): Comparison {
  const { matchedByHost, pairs: all } = pairs(old, neu);
  // the library's own default, for callers that name none (the command always names one: cli/options.ts)
  const maxDrop = options.maxDrop ?? DEFAULT_MAX_DROP;
  const notAskedFor: NotAskedDevice[] = [];
  const ps = all.filter(([, p]) => {
    const asked = !p.new && p.old ? notAskedBy(neu, p.old) : undefined;
    if (asked === undefined) return true;
    notAskedFor.push({ id: p.old!.id, name: p.old!.name, backend: p.old!.backend, pciBusId: p.old!.pciBusId, asked });
    return false;
  });
  const othersOf = otherRuns(options.moreBaselines, matchedByHost);
  const newsOf = otherRuns(options.moreCandidates, matchedByHost);
  const devices = ps.map(([key, p]) => {
    const olds = othersOf(key);
    const news = newsOf(key);
    const more = olds.length || news.length ? { ...(olds.length ? { olds } : {}), ...(news.length ? { news } : {}) } : undefined;
    return compareDevice(key, p, { ...(p.old && old ? { old: p.old.host?.hostname ?? old.host.hostname } : {}), ...(p.new ? { new: p.new.host?.hostname ?? neu.host.hostname } : {}) }, matchedByHost, { ...options, maxDrop }, old !== undefined, more);
  });
  return {
    ...(old ? { old: fileSummary(old) } : {}),
    new: fileSummary(neu),
    matchedByHost,
    ...(options.expectations ? { expectations: options.expectations.file } : {}),
    maxDrop,
    devices,
    counts: totalCounts(devices),
    ...(notAskedFor.length ? { notAskedFor } : {}),
  };
}

/** The devices not compared because the run did not ask for them, on one line (at most `shown` named), or undefined when none. */
export function notAskedLine(devices: readonly NotAskedDevice[] | undefined, shown = 20): string | undefined {
  if (!devices?.length) return undefined;
  const named = devices.slice(0, shown).map((d) => `${d.id} ${d.name}`);
  const more = devices.length > shown ? ` and ${devices.length - shown} more` : '';
  const asked = [...new Set(devices.map((d) => d.asked))].join('; ');
  return `not compared (not asked for: the run gave ${asked}): ${named.join(', ')}${more}`;
}

/** The changes that keep a gate from passing (regressions, unexpected passes, host errors), with their device. */
export function failingChanges(c: Comparison): { device: DeviceComparison; change: Change }[] {
  return c.devices.flatMap((device) => device.changes.filter((ch) => FAILING_KINDS.includes(ch.kind)).map((change) => ({ device, change })));
}

/** There is at least one regression, unexpected pass or host error (expected failures and flakes that passed on re-run are not). */
export function hasRegression(c: Comparison): boolean {
  return FAILING_KINDS.some((k) => c.counts[k] > 0);
}

/** The command's exit status for a comparison: 1 when there is a regression, else 0. */
export function exitStatus(c: Comparison): 0 | 1 {
  return hasRegression(c) ? 1 : 0;
}

// ---------------------------------------------------------------------------------------------------------------
// One failing change as a line, and the readable form of a whole comparison.

export function regressionKind(d: DeviceComparison, ch: Change): RegressionKind {
  if (ch.kind === 'error' && (ch.check === BANDWIDTH_CHECK || ch.check === REGISTRATION_CHECK)) return ch.decision?.outcome === 'too-noisy' ? 'noisy' : 'busy';
  if (ch.kind === 'unexpected-pass' || ch.kind === 'error') return ch.kind;
  if (ch.check === VERDICT_CHECK) return d.presence === 'missing' ? 'missing' : 'verdict';
  if (ch.check === BANDWIDTH_CHECK) return 'bandwidth';
  if (ch.check === REGISTRATION_CHECK) return 'registration';
  return 'status';
}

/** The device as the reports name it: `cuda:0 NVIDIA H200 (0000:00:06.0)`, with its host when matched by host. */
export function deviceName(d: DeviceComparison): string {
  const id = d.id.new && d.id.old && d.id.new !== d.id.old ? `${d.id.new} (was ${d.id.old})` : (d.id.new ?? d.id.old)!;
  return `${d.host ? `${d.host} ` : ''}${id} ${d.name} (${d.pciBusId ?? 'no PCI bus id'})`;
}

/** One failing change on one line, in full: `cuda:0 NVIDIA H200 (0000:00:06.0): registered 54.60 GB/s -> 43.68 GB/s (-20.0%): a drop of 20.0%, ...`. */
export function changeLine(d: DeviceComparison, ch: Change): string {
  const kind = regressionKind(d, ch);
  const what =
    kind === 'missing'
      ? `missing: the baseline had it (${d.verdict.old ?? 'no verdict'}, ${d.driver.old ?? 'no driver'}), this run has not`
      : kind === 'error'
        ? `${ch.check} could not be judged: the host failed it, not the driver`
        : kind === 'busy' || kind === 'noisy'
          ? `${ch.check === REGISTRATION_CHECK ? 'registered / page-locked' : 'registered GB/s'} not judged: the host, not the driver`
          : ch.summary;
  const why = [kind === 'missing' || kind === 'error' ? undefined : ch.note, ch.detail].filter(Boolean).join(': ');
  return `${deviceName(d)}: ${what}${why ? `: ${why}` : ''}`;
}

function table(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((cell, i) => cell.padEnd(widths[i]!)).join('  ').trimEnd());
}

const driverChange = (d: DeviceComparison): string => {
  const { old: o, new: n } = d.driver;
  if (o === undefined || n === undefined) return arrow(o, n);
  if (o === n) return o;
  const oName = o.split(' ')[0];
  const nWords = n.split(' ');
  return oName === nWords[0] ? `${o} -> ${nWords.slice(1).join(' ')}` : `${o} -> ${n}`;
};


/**
 * The comparison's outcome in words that agree with its counts: REGRESSION only where there is a regression or an
 * unexpected pass (the driver's), HOST ERROR where only the host failed (nothing judged of the driver), both where
 * both; `no regression` otherwise.
 */
/** A regression the driver is blamed for (a status, verdict or figure worse, an unexpected pass), not only the host's errors. */
export const driverRegressed = (c: Counts): boolean => c.regression + c['unexpected-pass'] > 0;

export function outcomeWord(c: Counts): string {
  const driver = driverRegressed(c);
  if (driver && c.error > 0) return 'REGRESSION (the driver), and HOST ERROR (the host)';
  if (driver) return 'REGRESSION';
  if (c.error > 0) return 'HOST ERROR (the host, not the driver): not judged';
  return 'no regression';
}

/** Totals on one line: `1 regression, 5 fixes, 0 new, 0 missing, 30 unchanged`. */
export function countsLine(c: Counts): string {
  const parts = [plural(c.regression, 'regression'), plural(c.fix, 'fix', 'fixes')];
  if (c['unexpected-pass']) parts.push(plural(c['unexpected-pass'], 'unexpected pass', 'unexpected passes'));
  if (c.error) parts.push(plural(c.error, 'host error'));
  if (c.expected) parts.push(`${c.expected} expected`);
  if (c.flaky) parts.push(`${c.flaky} flaky`);
  if (c.changed) parts.push(`${c.changed} changed`);
  parts.push(`${c.new} new`, `${c.missing} missing`, `${c.unchanged} unchanged`);
  return parts.join(', ');
}

const LINE_KIND: Record<ChangeKind, string> = {
  regression: 'REGRESSION',
  'unexpected-pass': 'UNEXPECTED PASS',
  error: 'HOST ERROR',
  expected: 'expected',
  flaky: 'flaky',
  fix: 'fix',
  changed: 'changed',
  new: 'new',
  missing: 'missing',
  unchanged: 'unchanged',
};

const figure = (d: DeviceComparison, which: 'old' | 'new'): string => d.changes.find((ch) => ch.check === BANDWIDTH_CHECK)?.[which]?.replace(' GB/s', '') ?? '-';

/**
 * The comparison as a table (a row per device: PCI bus id, driver old -> new, verdict, registered GB/s, counts),
 * then, per device, a line for each change that is not `unchanged` (regressions first), then the totals.
 * `labels` names the two files.
 */
export function formatComparison(c: Comparison, labels?: { old: string; new: string }): string {
  const out: string[] = [];
  const head = (which: 'old' | 'new'): string => {
    const s = c[which];
    if (!s) return `${which === 'old' ? 'OLD' : 'NEW'}: none`;
    return `${which === 'old' ? 'OLD' : 'NEW'}: ${labels ? `${labels[which]} ` : ''}(${s.hostname}, ${s.startedAt}, ${s.tool}, ${plural(s.devices, 'device')}${s.incomplete ? ', INCOMPLETE: interrupted' : ''})`;
  };
  out.push(head('old'), head('new'));
  if (c.expectations) out.push(`expectations: ${c.expectations}`);
  out.push(`registered GB/s: a drop of more than ${percent(c.maxDrop)} is a regression`);
  if (c.matchedByHost) out.push('devices matched by host, backend, PCI bus id and name');
  out.push('');
  const rows = [['device', 'pci', 'driver', 'verdict', 'GB/s', 'regr', 'fix', 'new', 'missing', 'unchanged']];
  for (const d of c.devices) {
    const id = d.id.new && d.id.old && d.id.new !== d.id.old ? `${d.id.new} (was ${d.id.old})` : (d.id.new ?? d.id.old)!;
    const verdict = d.verdict.old === d.verdict.new ? d.verdict.new! : arrow(d.verdict.old, d.verdict.new);
    const presence = d.presence === 'both' ? '' : d.presence === 'new' ? ' [new device]' : ' [MISSING device]';
    const gbps = figure(d, 'old') === figure(d, 'new') ? figure(d, 'new') : `${figure(d, 'old')} -> ${figure(d, 'new')}`;
    rows.push([`${d.host ? `${d.host} ` : ''}${id} ${d.name}${presence}`, d.pciBusId ?? '-', driverChange(d), verdict, gbps, String(d.counts.regression), String(d.counts.fix), String(d.counts.new), String(d.counts.missing), String(d.counts.unchanged)]);
  }
  out.push(...table(rows));
  for (const d of c.devices) {
    const shown = d.changes
      .filter((ch) => ch.kind !== 'unchanged' && !(d.presence !== 'both' && (ch.kind === 'new' || ch.kind === 'missing')))
      .sort((a, b) => CHANGE_KINDS.indexOf(a.kind) - CHANGE_KINDS.indexOf(b.kind));
    if (shown.length === 0 && d.presence === 'both') continue;
    out.push('', `${deviceName(d)}, driver ${driverChange(d)}`);
    if (d.presence === 'new') out.push(`  new device: ${plural(d.changes.filter((ch) => ch.check !== VERDICT_CHECK && ch.check !== BANDWIDTH_CHECK).length, 'check')}, not in OLD`);
    if (d.presence === 'missing') out.push(`  MISSING device: ${plural(d.changes.filter((ch) => ch.check !== VERDICT_CHECK && ch.check !== BANDWIDTH_CHECK).length, 'check')} in OLD, the device is not in NEW`);
    const rowsD = shown.map((ch) => [`  ${LINE_KIND[ch.kind]}`, ch.check, arrow(ch.old, ch.new), [ch.note, ch.detail].filter(Boolean).join(': ')]);
    if (rowsD.length) out.push(...table(rowsD));
    if (d.presence === 'both') out.push(`  ${d.counts.unchanged} unchanged`);
  }
  const notAsked = notAskedLine(c.notAskedFor);
  if (notAsked) out.push('', notAsked);
  out.push('', `${countsLine(c.counts)}: ${outcomeWord(c.counts)}`);
  return `${out.join('\n')}\n`;
}

/** Every failing change as data: what `--json` lists under `regressions`. */
export function regressionList(c: Comparison): Record<string, unknown>[] {
  return failingChanges(c).map(({ device: d, change: ch }) => ({
    kind: regressionKind(d, ch),
    // whose it is: a check that could not be judged on a busy or noisy machine, or that ended in the host's error
    blame: ch.kind === 'error' ? 'host' : 'driver',
    ...(d.host ? { host: d.host } : {}),
    pciBusId: d.pciBusId,
    device: d.id.new ?? d.id.old,
    name: d.name,
    backend: d.backend,
    ...(ch.check !== VERDICT_CHECK ? { check: ch.check } : {}),
    ...(ch.old !== undefined ? { old: ch.old } : {}),
    ...(ch.new !== undefined ? { new: ch.new } : {}),
    ...(ch.figures ? { figures: ch.figures } : {}),
    driver: d.driver,
    line: changeLine(d, ch),
  }));
}

/**
 * The comparison as JSON (the `--json` form), with a `format` tag so that readers can tell it from a results file.
 * `regression` is the exit status's (1: something failed); `driverRegression` and `hostError` say whose, as the
 * text's last line does: a host's error alone is never the driver's regression.
 */
export function comparisonJson(c: Comparison): string {
  const body = { format: 'mapped-reg-conformance comparison', version: 2, regression: hasRegression(c), driverRegression: driverRegressed(c.counts), hostError: c.counts.error > 0, regressions: regressionList(c), ...c };
  return `${JSON.stringify(body, null, 2)}\n`;
}
