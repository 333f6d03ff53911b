// What the HTML page and the Markdown summary repeat, capped (reporters/safe-text.ts): a device's name, id and
// driver at NAME_CAP characters, every message (observed, expected, message, log lines, errors, the verdict's
// reason) at MESSAGE_CAP, each cut one showing "…(N more characters)". The JSON results keep everything.
import type { CheckResult, DeviceResult, RunResult } from '../results/types.js';
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
    ...(d.errors ? { errors: d.errors.map(message) } : {}),
    ...(d.restarts ? { restarts: d.restarts.map(message) } : {}),
    ...(host ? { host: { ...host, hostname: name(host.hostname), kernel: name(host.kernel), platform: name(host.platform) } } : {}),
  };
}

/** A results file with what its reports repeat capped. */
export function capResult<R extends RunResult>(r: R): R {
  return {
    ...r,
    tool: { name: name(r.tool.name), version: name(r.tool.version) },
    host: { hostname: name(r.host.hostname), kernel: name(r.host.kernel), platform: name(r.host.platform) },
    devices: r.devices.map(capDevice),
  };
}
