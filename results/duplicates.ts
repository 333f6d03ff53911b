// A results file lists each device once, and merge and report take each run once: a device listed twice would be
// matched by its order in compare (20 regressions one way, none the other), and a file given twice would double
// every device. Both are bad input (exit 2, naming the device or the files). Devices are told apart as compare
// matches them (host in merged files, backend, PCI bus id, name) and by their id: two devices of one machine
// that share a name and have no PCI bus id (two OpenCL platforms' CPU device) stay two devices.
import { fileIdentity } from './file-identity.js';
import type { DeviceWithHost, RunResult } from './types.js';

/** Why `r` lists a device twice (one line naming it), or undefined. */
export function duplicateDevice(r: RunResult): string | undefined {
  const seen = new Set<string>();
  for (const d of r.devices as DeviceWithHost[]) {
    const host = d.host?.hostname ?? r.host.hostname;
    const key = JSON.stringify([host, d.backend, d.pciBusId, d.name, d.id]);
    if (seen.has(key)) {
      return `device ${d.id} (${JSON.stringify(d.name.slice(0, 200))}, ${d.pciBusId ?? 'no PCI bus id'}, host ${JSON.stringify(host.slice(0, 200))}) is listed twice: a results file holds each device once`;
    }
    seen.add(key);
  }
  return undefined;
}

/** The runs a file holds (a merged file: each of its parts), by host and start time. */
function runsOf(r: RunResult): string[] {
  const parts = (r as { merged?: { hostname: string; startedAt: string }[] }).merged;
  return parts ? parts.map((p) => `${p.hostname}\0${p.startedAt}`) : [`${r.host.hostname}\0${r.startedAt}`];
}

/** Why these inputs hold a file or a run twice (one line naming both), or undefined. */
export function duplicateInputs(results: readonly RunResult[], names: readonly string[]): string | undefined {
  const files = new Map<string, string>();
  const runs = new Map<string, string>();
  for (const [i, r] of results.entries()) {
    const name = names[i] ?? `file ${i + 1}`;
    const id = fileIdentity(name);
    const sameFile = files.get(id);
    if (sameFile !== undefined) return `${name} is the same file as ${sameFile}: each run is taken once`;
    files.set(id, name);
    for (const run of runsOf(r)) {
      const other = runs.get(run);
      if (other !== undefined) {
        const [host, started] = run.split('\0');
        return `${name} holds the same run as ${other} (host ${JSON.stringify(host!.slice(0, 200))}, started ${started}): each run is taken once`;
      }
      runs.set(run, name);
    }
  }
  return undefined;
}

/** The hosts whose runs a file holds (a merged file: each of its parts'). */
const hostsOf = (r: RunResult): string[] => {
  const parts = (r as { merged?: { hostname: string }[] }).merged;
  return parts ? parts.map((p) => p.hostname) : [r.host.hostname];
};

/**
 * What to use instead when merge would list a device twice because two of its inputs are runs of one host (a
 * merged file holds one run per host: a fleet, not a history): one line naming them and report and history; or
 * undefined when no two inputs share a host.
 */
export function sameHostRunsHint(results: readonly RunResult[], names: readonly string[]): string | undefined {
  const seen = new Map<string, string>();
  for (const [i, r] of results.entries()) {
    const name = names[i] ?? `file ${i + 1}`;
    for (const host of hostsOf(r)) {
      const other = seen.get(host);
      if (other !== undefined && other !== name) {
        return `${other} and ${name} are two runs of host ${JSON.stringify(host.slice(0, 200))}, and a merged file holds one run per host (a fleet): to see runs of one host side by side, use report ${other} ${name} --html OUT.html, or history add --db FILE ${other} ${name} (then history compare, history report)`;
      }
      seen.set(host, name);
    }
  }
  return undefined;
}
