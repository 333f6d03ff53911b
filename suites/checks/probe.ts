// probe.verdict and probe.release: the self-test on a scratch file of --size MiB, and its releases.
import type { CheckResult, VerdictJson } from '../../results/types.js';
import { staticVerdict, verdictJson, verdictToString, type ProbeReport, type TimingReport, type Verdict } from '../../src/index.js';
import type { Check, CheckContext } from '../check.js';
import { type Probed, probeOnce } from '../context.js';

export const PROBE_VERDICT = 'probe.verdict';
export const PROBE_RELEASE = 'probe.release';

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

/**
 * probe.verdict's data among a device's checks, when the check itself reported it (a probe.verdict the command
 * reported, crashed or timed out, has none).
 */
export function probeData(checks: readonly CheckResult[]): ProbeData | undefined {
  const data = checks.find((c) => c.id === PROBE_VERDICT)?.data;
  return data && 'verdict' in data ? (data as ProbeData) : undefined;
}

/** The self-test applies to devices whose static verdict asks for it. */
export function needsSelfTest({ device }: CheckContext): true | string {
  const s = staticVerdict(device.device);
  return s.kind === 'Self_test_required' ? true : `decided statically: ${verdictToString(s.verdict)}`;
}

/** Usable passes; Too_slow and Inconclusive (load, a transient failure) warn; false successes fail. */
function statusOf(v: Verdict): 'pass' | 'warn' | 'fail' {
  if (v.kind === 'Usable') return 'pass';
  if (v.kind === 'Too_slow' || v.kind === 'Inconclusive') return 'warn';
  return 'fail';
}

export const probeChecks: Check[] = [
  {
    id: PROBE_VERDICT,
    suite: 'probe',
    title: 'the self-test on a scratch file: bytes of both windows, verdict',
    applies: needsSelfTest,
    run: (ctx) => {
      const { report, scratch, phasesMs, load, numa } = probeOnce(ctx);
      const windows = report.windows.map((w, i) => `window ${i + 1}: ${w.equal === null ? 'not compared' : w.equal ? 'bytes equal' : `bytes differ at offset ${w.firstDifference}`}`);
      for (const line of report.log) ctx.log(line);
      const data: ProbeData = { verdict: verdictJson(report.verdict), windows: report.windows, timing: report.timing, scratch, phasesMs, ...(load ? { load } : {}), ...(numa ? { numa } : {}) };
      return {
        status: statusOf(report.verdict),
        expected: 'Usable',
        observed: `${verdictToString(report.verdict)}; ${windows.join(', ')}`,
        data,
      };
    },
  },
  {
    id: PROBE_RELEASE,
    suite: 'probe',
    title: 'both windows released at the first try',
    needs: [PROBE_VERDICT],
    applies: needsSelfTest,
    run: (ctx) => {
      const { report } = probeOnce(ctx);
      const registered = report.windows.filter((w) => w.release !== null);
      const observed = report.windows.map((w, i) => `window ${i + 1}: ${w.release === null ? 'never registered' : `${w.release} (${w.releaseTries} tr${w.releaseTries === 1 ? 'y' : 'ies'})`}`).join(', ');
      const ok = registered.length === 2 && registered.every((w) => w.release === 'first');
      return { status: ok ? 'pass' : 'fail', expected: 'both windows released at the first try', observed };
    },
  },
];
