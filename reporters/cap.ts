// What the reports repeat, capped (reporters/safe-text.ts): the HTML pages (report, history report), the Markdown
// summary and JUnit. A device's name, id and driver, a host, a check id at NAME_CAP characters, every message
// (observed, expected, message, log lines, errors, the verdict's reason, the gate's reasons and notes) at
// MESSAGE_CAP, each cut one showing "…(N more characters)"; what the machine was seen doing (the load: each
// reason, the monitor's note at MESSAGE_CAP, each process's name at NAME_CAP; a line lists LIST_CAP processes);
// the step summary as a whole at SUMMARY_CAP bytes. The JSON results keep everything.
import type { Change, DeviceComparison } from '../results/compare.js';
import type { CheckResult, DeviceLoad, DeviceResult, GateDecision, RunResult } from '../results/types.js';
import { MESSAGE_CAP, NAME_CAP, capText } from './safe-text.js';

const name = (s: string): string => capText(s, NAME_CAP);
const message = (s: string): string => capText(s, MESSAGE_CAP);
const opt = <T extends string | undefined>(s: T, f: (x: string) => string): T => (s === undefined ? s : (f(s) as T));

function capCheck(c: CheckResult): CheckResult {
  return {
    ...c,
    id: name(c.id),
    title: opt(c.title, message),
    ...(c.expected !== undefined ? { expected: message(c.expected) } : {}),
    ...(c.observed !== undefined ? { observed: message(c.observed) } : {}),
    ...(c.message !== undefined ? { message: message(c.message) } : {}),
    ...(c.log ? { log: c.log.map(message) } : {}),
  };
}

/** What a device's process saw of the machine, its texts capped (300 processes on a GPU make reasons of 8 kB). */
export function capLoad(l: DeviceLoad): DeviceLoad {
  return {
    ...l,
    why: l.why.map(message),
    processes: l.processes.map((p) => ({ ...p, name: name(p.name) })),
    ...(l.monitorNote !== undefined ? { monitorNote: message(l.monitorNote) } : {}),
  };
}

function capDevice<D extends DeviceResult>(d: D): D {
  const host = (d as { host?: RunResult['host'] }).host;
  return {
    ...d,
    id: name(d.id),
    name: name(d.name),
    pciBusId: d.pciBusId === null ? null : name(d.pciBusId),
    driver: { ...d.driver, name: name(d.driver.name), version: name(d.driver.version) },
    staticVerdict: opt(d.staticVerdict, message),
    verdict: { ...d.verdict, text: opt(d.verdict.text, message), ...(d.verdict.reason !== undefined ? { reason: message(d.verdict.reason) } : {}) },
    checks: d.checks.map(capCheck),
    ...(d.load ? { load: capLoad(d.load) } : {}),
    ...(d.errors ? { errors: d.errors.map(message) } : {}),
    ...(d.restarts ? { restarts: d.restarts.map(message) } : {}),
    ...(host ? { host: { ...host, hostname: name(host.hostname), kernel: name(host.kernel), platform: name(host.platform) } } : {}),
  };
}

/** The gate's decision with what the reports repeat of it capped (a baseline's device of a 100 kB name among them). */
export function capGate(g: GateDecision): GateDecision {
  const side = <T extends { old?: string; new?: string }>(x: T): T => ({ ...x, ...(x.old !== undefined ? { old: name(x.old) } : {}), ...(x.new !== undefined ? { new: name(x.new) } : {}) });
  return {
    ...g,
    headline: message(g.headline),
    ...(g.baseline !== undefined ? { baseline: message(g.baseline) } : {}),
    ...(g.expectations !== undefined ? { expectations: message(g.expectations) } : {}),
    requires: g.requires.map(name),
    reasons: g.reasons.map((r) => ({ ...side(r), text: message(r.text), ...(r.device !== undefined ? { device: name(r.device) } : {}), ...(r.name !== undefined ? { name: name(r.name) } : {}), ...(r.check !== undefined ? { check: name(r.check) } : {}), ...(r.pciBusId ? { pciBusId: name(r.pciBusId) } : {}) })),
    notes: g.notes.map((n) => ({
      ...side(n),
      device: name(n.device),
      check: name(n.check),
      note: opt(n.note, message),
      detail: opt(n.detail, message),
      ...(n.expectation ? { expectation: { source: message(n.expectation.source), line: message(n.expectation.line) } } : {}),
    })),
    missing: g.missing.map((m) => ({ ...m, id: name(m.id), name: name(m.name), backend: name(m.backend), pciBusId: m.pciBusId === null ? null : name(m.pciBusId), verdict: opt(m.verdict, name), driver: opt(m.driver, name), why: opt(m.why, message) })),
    ...(g.notAskedFor ? { notAskedFor: g.notAskedFor.map((m) => ({ ...m, id: name(m.id), name: name(m.name), backend: name(m.backend), pciBusId: m.pciBusId === null ? null : name(m.pciBusId), asked: message(m.asked) })) } : {}),
  };
}

/** A results file with what its reports repeat capped. */
export function capResult<R extends RunResult>(r: R): R {
  return {
    ...r,
    tool: { name: name(r.tool.name), version: name(r.tool.version) },
    host: { hostname: name(r.host.hostname), kernel: name(r.host.kernel), platform: name(r.host.platform) },
    devices: r.devices.map(capDevice),
    ...(r.gate ? { gate: capGate(r.gate) } : {}),
  };
}

/** A device of a comparison (compare, history compare) with what a page repeats of it capped. */
export function capComparedDevice(d: DeviceComparison): DeviceComparison {
  const side = (x: { old?: string; new?: string }, f: (s: string) => string): { old?: string; new?: string } => ({ ...(x.old !== undefined ? { old: f(x.old) } : {}), ...(x.new !== undefined ? { new: f(x.new) } : {}) });
  return {
    ...d,
    key: name(d.key),
    ...(d.host !== undefined ? { host: name(d.host) } : {}),
    backend: name(d.backend),
    name: name(d.name),
    pciBusId: d.pciBusId === null ? null : name(d.pciBusId),
    id: side(d.id, name),
    driver: side(d.driver, name),
    verdict: side(d.verdict, message),
    changes: d.changes.map(capChange),
  };
}

/** A change with its texts capped. */
export function capChange(c: Change): Change {
  return {
    ...c,
    check: name(c.check),
    ...(c.old !== undefined ? { old: name(c.old) } : {}),
    ...(c.new !== undefined ? { new: name(c.new) } : {}),
    summary: message(c.summary),
    detail: opt(c.detail, message),
    note: opt(c.note, message),
    ...(c.expectation ? { expectation: { source: message(c.expectation.source), line: message(c.expectation.line) } } : {}),
  };
}

/** The most bytes of the step summary: GitHub drops a step's summary over 1 MiB whole, gate and all. */
export const SUMMARY_CAP = 512 * 1024;

/** A Markdown summary cut, at a line, to SUMMARY_CAP bytes, with a last line that says so. */
export function capSummary(text: string): string {
  if (Buffer.byteLength(text) <= SUMMARY_CAP) return text;
  const cut = Buffer.from(text).subarray(0, SUMMARY_CAP - 200).toString('utf8');
  const whole = cut.slice(0, cut.lastIndexOf('\n') + 1);
  return `${whole}\n…(the summary is cut at ${SUMMARY_CAP / 1024} KiB: the JSON results hold everything)\n`;
}
