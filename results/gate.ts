// The gate: the one place that decides whether a run passes. The command calls it after the run; every report
// (terminal, JSON, JUnit, step summary, HTML) shows its decision and never decides anything itself.
//
// A run is compared with its baseline (`--baseline`), or judged on its own when there is none, with the rules of
// `compare` (results/compare.ts); then come the requirements (`--require`), a GPU driver that loaded and failed
// to start, and errors outside any check. What keeps the gate red is listed once, in GATE_FAILS_ON below (which
// --help prints; docs/gate.md tells each at length).
//
// What may be a flake gets one re-run, alone, before it counts (deqp-runner, piglit): a check listed as a flake,
// any `timing.*` check, a verdict that became Too_slow, and a registered GB/s or registered / page-locked below
// the allowed drop (judged again with the re-run's own control copy and look at the machine).
// The absolute GB/s are judged only where the run saw the machine quiet (results/compare.ts, bandwidthChange):
// figures that fell on a busy machine are the host's (`busy`, exit 1: a gate that could not measure never passes),
// while registered / page-locked (`registration`), which a busy machine moves far less, is judged always; a
// fall seen on a machine that stayed busy is the host's too.
import { MAX_RETIMES } from './decision.js';
import { type Change, type Comparison, type MoreRuns, type DeviceComparison, BANDWIDTH_CHECK, REGISTRATION_CHECK, VERDICT_CHECK, bandwidthChange, registrationChange, changeLine, classify, classifyVerdict, compareResults, failingChanges, otherRuns, recount, regressionKind, totalCounts, verdictLabel } from './compare.js';
import type { Expectations } from './expectations.js';
import { InputError } from './read.js';
import { type Backend, BACKENDS, type CheckResult, type DeviceLoad, type DeviceWithHost, type GateDecision, type GateNote, type GateReason, type MissingDevice, type RunResult } from './types.js';
import { gbpsText, percent, plural } from './format.js';

/** What keeps the gate red, in the words --help prints them (docs/gate.md tells each at length). */
export const GATE_FAILS_ON: readonly string[] = [
  'a failed check (unless a known failure, or failed in the baseline too)',
  'with --baseline, on a device gone, a status more severe, a verdict that left Usable, a registered / page-locked or registered GB/s down more than --max-drop at the stated confidence, or a host too noisy to judge it',
  'on a GPU driver that loads and then fails to start',
  'an unmet --require',
  'a host error',
  'an unexpected pass (a listed failure that passed)',
];

/** The gate's rules in one paragraph: what keeps it red, and what is re-run before it counts. */
export const gateRulesText = (): string => `It fails on ${GATE_FAILS_ON.join('; ')}. A listed flake or a timing is re-run once first.`;

/** Re-runs one check of one device of the run (by its id in that run); undefined when it could not. */
export type Rerun = (deviceId: string, checkId: string) => Promise<CheckResult | undefined>;

/** `--require`: a backend with at least one device, one device by id, or an exact count of a backend's devices. */
export type Requirement = { spec: string; backend: Backend } & ({ kind: 'any' } | { kind: 'id'; id: string } | { kind: 'count'; count: number });

/** Parses a `--require` value; bad input is an InputError (exit 2). */
export function parseRequirement(spec: string): Requirement {
  const m = /^([a-z]+)(?::(\d+)|=(\d+))?$/.exec(spec.trim());
  const backend = m?.[1] as Backend | undefined;
  if (!m || !backend || !BACKENDS.includes(backend)) {
    throw new InputError(`--require ${JSON.stringify(spec)}: expected a backend (${BACKENDS.join(', ')}), a device id such as cuda:0, or a count such as cuda=8`);
  }
  if (m[2] !== undefined) {
    if (backend === 'cpu') throw new InputError(`--require ${spec}: the CPU device has no index (use --require cpu)`);
    return { spec, backend, kind: 'id', id: `${backend}:${Number(m[2])}` };
  }
  if (m[3] !== undefined) {
    const count = Number(m[3]);
    if (!Number.isSafeInteger(count) || count < 1) throw new InputError(`--require ${spec}: the count must be a whole number of at least 1`);
    return { spec, backend, kind: 'count', count };
  }
  return { spec, backend, kind: 'any' };
}

export interface GateOptions {
  baseline?: { file: string; result: RunResult };
  /** More runs of the baseline (several `--baseline` files): their figures and spread join the decision on the figures. */
  moreBaselines?: readonly { file: string; result: RunResult }[];
  expectations?: Expectations;
  requires?: readonly Requirement[];
  /** Default DEFAULT_MAX_DROP. */
  maxDrop?: number;
  /** How to re-run a check of the run (none when judging files). */
  rerun?: Rerun;
}

const verdictOf = (r: CheckResult | undefined): { kind: string; refusal?: string } | undefined => (r?.data as { verdict?: { kind: string; refusal?: string } } | undefined)?.verdict;

/** What a re-run of probe.verdict measured: its figures and what it saw of the machine. */
interface RerunTiming {
  timing?: { registeredGBps?: number; pageLockedGBps?: number | null; pageLockedRatio?: number | null; samples?: NonNullable<DeviceWithHost['timing']>['samples'] };
  load?: DeviceLoad;
}
const rerunTiming = (r: CheckResult | undefined): RerunTiming | undefined => r?.data as RerunTiming | undefined;

/** The new device as the re-run measured it: its figures and its look at the machine in place of the first run's. */
function asRerun(neu: DeviceWithHost, data: RerunTiming | undefined): DeviceWithHost | undefined {
  const t = data?.timing;
  if (!neu.timing || t?.registeredGBps === undefined) return undefined;
  const timing = { ...neu.timing, registeredGBps: t.registeredGBps };
  if (t.pageLockedGBps != null) timing.pageLockedGBps = t.pageLockedGBps;
  if (t.pageLockedRatio != null) timing.pageLockedRatio = t.pageLockedRatio;
  // the re-run's own rounds, or none: never the first run's rounds beside the re-run's figures
  if (t.samples) timing.samples = t.samples;
  else delete timing.samples;
  return { ...neu, timing, ...(data?.load ? { load: data.load } : {}) };
}

const flaky = (ch: Change, rerunInfo: NonNullable<Change['rerun']>, what: string): Change => ({ ...ch, kind: 'flaky', note: `flaky, passed on re-run (${what})`, rerun: rerunInfo });
const still = (ch: Change, rerunInfo: Change['rerun'] | undefined, what: string): Change => ({ ...ch, note: `${ch.note ? `${ch.note}; ` : ''}${what}`, ...(rerunInfo ? { rerun: rerunInfo } : {}) });

/** One device's regression that may be a flake, with what the re-run of one check gives. */
interface Suspect {
  ch: Change;
  old: DeviceWithHost | undefined;
  /** The same device in the baseline's other runs. */
  olds: DeviceWithHost[];
  neu: DeviceWithHost;
  maxDrop: number;
  /** The check's re-run; `attempt` 1 and more: the figure's further timings (MAX_RETIMES), each shared by the figures. */
  once: (checkId: string, attempt?: number) => Promise<CheckResult | undefined>;
}

async function rerunVerdict({ ch, old, neu, once }: Suspect): Promise<Change> {
  const r = await once('probe.verdict');
  const v = verdictOf(r);
  const info = r ? { status: r.status, ...(v ? { verdict: verdictLabel(v) } : {}) } : undefined;
  return v && classifyVerdict(old?.verdict, v) !== 'regression' ? flaky(ch, info!, verdictLabel(v)) : still(ch, info, r ? `re-run: ${v ? verdictLabel(v) : r.status}` : 'could not be re-run');
}

/**
 * A registered GB/s or a registered / page-locked that fell, or that the decision could not tell from the limit
 * (results/decision.ts, `retime`): judged again with the first run and the re-run as the candidate's two runs (their
 * rounds and their spread), the re-run's control copy and look at the machine. A re-run that fell again on a busy
 * machine is the host's.
 */
async function rerunFigure({ ch, old, olds, neu, maxDrop, once }: Suspect): Promise<Change> {
  const registration = ch.check === REGISTRATION_CHECK;
  const judge = (again: DeviceWithHost, more: MoreRuns): Change | undefined => (registration ? registrationChange(old, again, maxDrop, more) : bandwidthChange(old, again, maxDrop, more));
  // the candidate's runs so far: with their rounds, the runs are judged together (their spread shows the host's
  // between runs); figures without their noise are judged on the last re-run alone, as before the rounds were kept
  const runs: DeviceWithHost[] = [neu];
  let r: CheckResult | undefined;
  let judged: Change | undefined;
  let together = false;
  for (let t = 0; t < MAX_RETIMES; t++) {
    r = await once('probe.verdict', t);
    const again = asRerun(neu, rerunTiming(r));
    if (!again) break;
    together = again.timing?.samples !== undefined && runs.every((x) => x.timing?.samples !== undefined);
    judged = judge(again, together ? { olds, news: [...runs] } : { olds });
    // timed again only while the runs so far cannot tell the figure from the limit (never for a busy machine)
    if (!together || !judged?.decision?.retime || again.load?.busy) break;
    runs.push(again);
  }
  const data = rerunTiming(r);
  const figure = data?.timing?.registeredGBps;
  const ratio = data?.timing?.pageLockedRatio ?? undefined;
  const shown = registration ? (ratio !== undefined ? ratio.toFixed(3) : undefined) : figure !== undefined ? gbpsText(figure) : undefined;
  const info = r ? { status: r.status, ...(figure !== undefined ? { registeredGBps: figure } : {}) } : undefined;
  const rerunText = `re-run: ${shown ?? r?.status ?? 'none'}`;
  const notJudged = (): Change => still(ch, info, r ? rerunText : 'could not be re-run');
  // the runs judged together are counted in the decision's noise (`1+2 runs`)
  if (judged?.kind === 'error') return { ...judged, ...(together ? { note: `${judged.note ?? ''}; ${rerunText}` } : {}), rerun: info! };
  if (judged?.kind === 'regression' && together) return { ...judged, note: `${judged.note ?? ''}; ${rerunText}`, rerun: info! };
  if (judged?.kind === 'regression') return still(ch, info, rerunText);
  if (ch.kind !== 'regression') {
    // re-timed because the first run alone was near the limit, or too noisy to judge: the runs decide
    if (judged) return { ...judged, ...(judged.note ? {} : { note: rerunText }), rerun: info! };
    return notJudged();
  }
  if (judged && shown !== undefined) return { ...flaky(ch, info!, shown), ...(judged.decision ? { decision: judged.decision } : {}) };
  return notJudged();
}

async function rerunCheck({ ch, old, once }: Suspect): Promise<Change> {
  const r = await once(ch.check);
  const info = r ? { status: r.status, ...(r.observed ? { observed: r.observed.replace(/\s+/g, ' ') } : {}) } : undefined;
  const oldCheck = old?.checks.find((x) => x.id === ch.check);
  // a re-run that skipped proves nothing
  const again = r && r.status !== 'skip' ? classify(oldCheck, r).kind : 'regression';
  return again !== 'regression' && again !== 'error' ? flaky(ch, info!, r!.status) : still(ch, info, r ? `re-run: ${r.status}` : 'could not be re-run');
}

/** How a regression of `ch` may be re-run on the new device, or undefined when it is not one that may be a flake. */
function rerunOf(ch: Change, tooSlow: boolean): ((s: Suspect) => Promise<Change>) | undefined {
  const flake = ch.note?.includes('known flake') ?? false;
  if (ch.check === VERDICT_CHECK) return tooSlow || flake ? rerunVerdict : undefined;
  if (ch.check === BANDWIDTH_CHECK || ch.check === REGISTRATION_CHECK) return rerunFigure;
  return flake || ch.check.startsWith('timing.') || (tooSlow && ch.check === 'probe.verdict') ? rerunCheck : undefined;
}

/** Each regression that may be a flake is re-run once; one that no longer regresses becomes `flaky`. */
async function rerunFlakes(c: Comparison, run: RunResult, baseline: RunResult | undefined, maxDrop: number, rerun: Rerun, moreBaselines?: readonly RunResult[]): Promise<void> {
  const byId = new Map(run.devices.map((d) => [d.id, d as DeviceWithHost]));
  const cache = new Map<string, Promise<CheckResult | undefined>>();
  const once = (deviceId: string, checkId: string, attempt = 0): Promise<CheckResult | undefined> => {
    const k = `${deviceId}\u0000${checkId}\u0000${attempt}`;
    let p = cache.get(k);
    if (!p) {
      p = rerun(deviceId, checkId).catch(() => undefined);
      cache.set(k, p);
    }
    return p;
  };
  const othersOf = otherRuns(moreBaselines, c.matchedByHost);
  for (const d of c.devices) {
    const neu = d.id.new ? byId.get(d.id.new) : undefined;
    if (!neu) continue;
    const old = d.id.old && baseline ? (baseline.devices.find((x) => x.id === d.id.old && x.pciBusId === d.pciBusId && x.name === d.name) as DeviceWithHost | undefined) : undefined;
    const tooSlow = neu.verdict.kind === 'Too_slow';
    for (let i = 0; i < d.changes.length; i++) {
      const ch = d.changes[i]!;
      // a figure the decision could not tell from the limit, or too noisy to judge, is re-timed too (`retime`)
      const figure = (ch.check === BANDWIDTH_CHECK || ch.check === REGISTRATION_CHECK) && ch.decision?.retime === true && (ch.kind === 'unchanged' || ch.decision.outcome === 'too-noisy');
      const again = ch.kind === 'regression' || figure ? rerunOf(ch, tooSlow) : undefined;
      if (again) d.changes[i] = await again({ ch, old, olds: othersOf(d.key), neu, maxDrop, once: (checkId, attempt) => once(neu.id, checkId, attempt) });
    }
    recount(d);
  }
  c.counts = totalCounts(c.devices);
}

/** Whether each requirement holds in the run, as reasons for those that do not. */
function unmet(requires: readonly Requirement[], run: RunResult): GateReason[] {
  const why = (b: Backend): string => {
    const report = run.backends?.find((r) => r.backend === b);
    return report?.note ? `: ${report.note}` : report?.library === null ? ': no library' : '';
  };
  const out: GateReason[] = [];
  for (const r of requires) {
    const ofBackend = run.devices.filter((d) => d.backend === r.backend);
    const found = `found ${ofBackend.length ? ofBackend.map((d) => d.id).join(', ') : `no ${r.backend} device`}`;
    const bad = r.kind === 'any' ? ofBackend.length === 0 : r.kind === 'id' ? !ofBackend.some((d) => d.id === r.id) : ofBackend.length !== r.count;
    if (!bad) continue;
    const wanted = r.kind === 'any' ? `at least one ${r.backend} device` : r.kind === 'id' ? `the device ${r.id}` : `exactly ${plural(r.count, `${r.backend} device`)}`;
    out.push({ kind: 'requirement', text: `--require ${r.spec}: ${wanted} required, ${found}${why(r.backend)}` });
  }
  return out;
}

function headlineOf(pass: boolean, reasons: GateReason[], run: RunResult, o: GateOptions, c: Comparison): string {
  if (pass) {
    const kinds = new Map<string, number>();
    for (const d of run.devices) kinds.set(d.verdict.kind, (kinds.get(d.verdict.kind) ?? 0) + 1);
    const verdicts = [...kinds].map(([k, n]) => `${n} ${k}`).join(', ');
    const runs = o.moreBaselines?.length ? ` and ${plural(o.moreBaselines.length, 'more run')}` : '';
    const against = o.baseline ? `no regression against ${o.baseline.file}${runs} (registered GB/s within ${percent(c.maxDrop)})` : 'no check failed';
    const extra = [c.counts.expected ? `${c.counts.expected} known failure(s)` : '', c.counts.flaky ? `${c.counts.flaky} flaky, passed on re-run` : ''].filter(Boolean).join(', ');
    return `PASS: ${plural(run.devices.length, 'device')}${verdicts ? ` (${verdicts})` : ''}, ${against}${extra ? `; ${extra}` : ''}`;
  }
  return `FAIL${blameOf(reasons)}: ${failLine(reasons)}`;
}

/**
 * Whose the failure is, for the headline: "(the host, not the driver)" only when every reason is the host's; when
 * some are and some are not, both are named, with how many are the host's; nothing when none is.
 */
export function blameOf(reasons: readonly GateReason[]): string {
  const host = reasons.filter((r) => r.host).length;
  if (host === 0) return '';
  if (host === reasons.length) return ' (the host, not the driver)';
  return ` (the driver, and the host: ${host} of ${plural(reasons.length, 'reason')} the host's)`;
}

/**
 * The headline's reason: the first of the driver's where some are the host's (the one that needs a fix of the
 * driver), and how many more there are. "more", not "more above" or "below": the reports list the reasons above
 * the headline (the terminal) or below it (JUnit, the step summary).
 */
function failLine(reasons: readonly GateReason[]): string {
  const first = reasons.find((r) => !r.host) ?? reasons[0]!;
  return `${first.text}${reasons.length > 1 ? ` (and ${reasons.length - 1} more)` : ''}`;
}

/** The run compared with its baseline (or with nothing), after re-running once what may be a flake. */
export async function judge(run: RunResult, o: GateOptions = {}): Promise<Comparison> {
  // compare applies the default limit, for a caller that names none
  const more = o.moreBaselines?.map((b) => b.result);
  const c = compareResults(o.baseline?.result, run, { ...(o.expectations ? { expectations: o.expectations } : {}), ...(o.maxDrop !== undefined ? { maxDrop: o.maxDrop } : {}), ...(more?.length ? { moreBaselines: more } : {}) });
  if (o.rerun) await rerunFlakes(c, run, o.baseline?.result, c.maxDrop, o.rerun, more);
  return c;
}

/** The gate's decision on a run (after re-running what may be a flake, when `rerun` is given). */
export async function decide(run: RunResult, o: GateOptions = {}): Promise<GateDecision> {
  const c = await judge(run, o);
  const maxDrop = c.maxDrop;
  const reasons: GateReason[] = [];
  // the run's own troubles first: a driver that failed to start explains the missing devices below
  for (const b of run.backends ?? []) {
    if (b.initError) reasons.push({ kind: 'driver-init', text: `${b.initError.message}: ${b.library ?? 'the library'} loaded, then failed to start` });
  }
  reasons.push(...unmet(o.requires ?? [], run));
  for (const d of run.devices) {
    for (const e of d.errors ?? []) reasons.push({ kind: 'run-error', device: d.id, name: d.name, pciBusId: d.pciBusId, text: `${d.id} ${d.name}: ${e}` });
  }
  const missing: MissingDevice[] = [];
  for (const { device: d, change: ch } of failingChanges(c)) {
    const kind = regressionKind(d, ch);
    const id = (d.id.new ?? d.id.old)!;
    if (kind === 'missing') {
      const report = run.backends?.find((b) => b.backend === d.backend);
      const why = report?.initError?.message ?? report?.note ?? (report ? `${d.backend} found ${plural(report.devices, 'device')}` : `${d.backend} was not asked for`);
      missing.push({ id, name: d.name, backend: d.backend, pciBusId: d.pciBusId, ...(d.verdict.old ? { verdict: d.verdict.old } : {}), ...(d.driver.old ? { driver: d.driver.old } : {}), why });
      reasons.push({ kind, device: id, name: d.name, pciBusId: d.pciBusId, ...(ch.old ? { old: ch.old } : {}), text: `${changeLine(d, ch)}: ${why}` });
      continue;
    }
    reasons.push({
      kind,
      device: id,
      name: d.name,
      pciBusId: d.pciBusId,
      ...(ch.check !== VERDICT_CHECK ? { check: ch.check } : {}),
      ...(ch.old !== undefined ? { old: ch.old } : {}),
      ...(ch.new !== undefined ? { new: ch.new } : {}),
      ...(kind === 'error' || kind === 'busy' || kind === 'noisy' ? { host: true } : {}),
      text: changeLine(d, ch),
    });
  }
  const notes: GateNote[] = c.devices.flatMap((d: DeviceComparison) =>
    d.changes
      .filter((ch) => !['unchanged', 'new', 'missing'].includes(ch.kind))
      .map((ch) => ({
        device: (d.id.new ?? d.id.old)!,
        check: ch.check,
        kind: ch.kind,
        ...(ch.old !== undefined ? { old: ch.old } : {}),
        ...(ch.new !== undefined ? { new: ch.new } : {}),
        ...(ch.note ? { note: ch.note } : {}),
        ...(ch.detail ? { detail: ch.detail } : {}),
        ...(ch.expectation ? { expectation: ch.expectation } : {}),
        ...(ch.figures ? { figures: ch.figures } : {}),
        ...(ch.decision ? { decision: ch.decision } : {}),
      })),
  );
  const pass = reasons.length === 0;
  const figures = c.devices.flatMap((d) => d.changes.flatMap((ch) => (ch.decision ? [{ device: (d.id.new ?? d.id.old)!, check: ch.check, decision: ch.decision }] : [])));
  return {
    pass,
    headline: headlineOf(pass, reasons, run, o, c),
    ...(o.baseline ? { baseline: o.baseline.file } : {}),
    ...(o.expectations ? { expectations: o.expectations.file } : {}),
    maxDrop,
    requires: (o.requires ?? []).map((r) => r.spec),
    reasons,
    notes,
    missing,
    ...(c.notAskedFor ? { notAskedFor: c.notAskedFor } : {}),
    counts: c.counts,
    ...(figures.length ? { figures } : {}),
  };
}
