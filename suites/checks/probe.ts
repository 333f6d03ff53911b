// probe.verdict and probe.release: the self-test on a scratch file of --size MiB, and its releases.
import { staticVerdict, verdictJson, verdictName, verdictToString, type Verdict } from '../../src/index.js';
import type { Check, CheckContext } from '../check.js';
import { PROBE_RELEASE, PROBE_VERDICT, type ProbeData } from './data.js';
import { probeOnce } from '../context.js';

export { PROBE_RELEASE, PROBE_VERDICT, type ProbeData, probeData } from './data.js';

/** The self-test applies to devices whose static verdict asks for it. */
export function needsSelfTest({ device }: CheckContext): true | string {
  const s = staticVerdict(device.device);
  // the verdict's name alone: static.verdict tells its reason, once
  return s.kind === 'Self_test_required' ? true : `decided statically: ${verdictName(s.verdict)}`;
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
