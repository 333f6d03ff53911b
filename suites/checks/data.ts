// The checks' ids and the shapes of their data, for whoever reads a run's results (the command, the bench): types
// only besides the ids, so that reading them loads no check, binding or driver.
import type { Link } from '../../bindings/pci.js';
import type { CheckResult, VerdictJson } from '../../results/types.js';
import type { ProbeReport, TimingReport } from '../../src/index.js';
import type { Probed } from '../context.js';

export const STATIC_VERDICT = 'static.verdict';
export const PROBE_VERDICT = 'probe.verdict';
export const PROBE_RELEASE = 'probe.release';
export const TIMING_MARGIN = 'timing.margin';
export const TIMING_LINK = 'timing.link';

/** What static.verdict's data holds: the static verdict, its kind, and for a refused device the ops opened (0). */
export type StaticData = { static: string; kind: string; opsOpened?: number };

/** What probe.verdict's data holds (through JSON: a control figure of `timing` the clock gave no duration for is null). */
export type ProbeData = {
  verdict: VerdictJson;
  windows: ProbeReport['windows'];
  /** null when the self-test ended before its timed copies. */
  timing: TimingReport | null;
  scratch: Probed['scratch'];
  phasesMs: Probed['phasesMs'];
  load?: Probed['load'];
  numa?: Probed['numa'];
};

/** What timing.margin's data holds: the self-test's timing. */
export type MarginData = TimingReport;

/** What timing.link's data holds: the link, and the registered copy's share of it (none without the self-test's timing). */
export type LinkData = { link: Link; registeredGBps?: number; share?: number };

/**
 * probe.verdict's data among a device's checks, when the check itself reported it (a probe.verdict the command
 * reported, crashed or timed out, has none).
 */
export function probeData(checks: readonly CheckResult[]): ProbeData | undefined {
  const data = checks.find((c) => c.id === PROBE_VERDICT)?.data;
  return data && 'verdict' in data ? (data as ProbeData) : undefined;
}

/** The link timing.link read, among a device's checks (none when it did not run, or the command reported it). */
export function linkOf(checks: readonly CheckResult[]): Link | undefined {
  const data = checks.find((c) => c.id === TIMING_LINK)?.data;
  return data && 'link' in data ? (data as LinkData).link : undefined;
}
