// timing.margin (the spec's margin) and timing.link (the registered copy against the PCIe link's limit).
import { type Link, readLink } from '../../bindings/pci.js';
import type { Check, CheckContext } from '../check.js';
import { probeOnce } from '../context.js';
import { needsSelfTest } from './probe.js';
import { type LinkData, type MarginData, PROBE_VERDICT, TIMING_LINK, TIMING_MARGIN } from './data.js';

export { type LinkData, type MarginData, TIMING_LINK, TIMING_MARGIN, linkOf } from './data.js';

/**
 * Below this share of the PCIe link's limit the registered copy is a `warn`: a discrete GPU copying from
 * pinned memory reaches 80 to 90% of it (the H200 of the facts file: 88%), so under 70% something (a narrower
 * link than negotiated, a slow IOMMU path, a throttled copy engine) deserves a look.
 */
export const LINK_WARN_FRACTION = 0.7;

function linkApplies(ctx: CheckContext): true | string {
  const self = needsSelfTest(ctx);
  if (self !== true) return self;
  if (!ctx.device.pciBusId) return 'the device has no PCI bus id';
  const link = readLink(ctx.device.pciBusId);
  if (typeof link === 'string') return link;
  // a busy machine's figure says nothing of the link: not judged (the gate says the host was busy)
  let load;
  try {
    load = probeOnce(ctx).load;
  } catch {
    return true; // the probe's own failure: run() reports it
  }
  return load?.busy ? `not judged: the machine was busy during the timed copies (${load.why.join('; ')})` : true;
}

export const timingChecks: Check[] = [
  {
    id: TIMING_MARGIN,
    suite: 'timing',
    // the timing of probe.verdict's self-test
    needs: [PROBE_VERDICT],
    title: 'registered copy at least the margin of the staged one (best of N against best of N)',
    applies: needsSelfTest,
    run: (ctx) => {
      const { report } = probeOnce(ctx);
      const t = report.timing;
      const expected = `registered >= ${ctx.options.minRelativeSpeed} x staged, best of ${ctx.options.runs}`;
      if (!t) return { status: 'warn', expected, observed: `no timing: the self-test ended before it (${report.verdict.kind})` };
      return {
        status: t.ratio >= t.minRelativeSpeed ? 'pass' : 'fail',
        expected,
        observed: `registered ${t.registeredGBps.toFixed(2)} GB/s, staged ${t.stagedGBps.toFixed(2)} GB/s, ratio ${t.ratio.toFixed(3)}`,
        data: { ...t } satisfies MarginData,
      };
    },
  },
  {
    id: TIMING_LINK,
    suite: 'timing',
    // the timing of probe.verdict's self-test
    needs: [PROBE_VERDICT],
    title: `registered copy against the PCIe link's limit (warn below ${LINK_WARN_FRACTION * 100}%, or on a link trained below its maximum)`,
    applies: linkApplies,
    run: (ctx) => {
      const link = readLink(ctx.device.pciBusId!) as Link;
      const t = probeOnce(ctx).report.timing;
      const expected = `registered >= ${LINK_WARN_FRACTION * 100}% of the link (${link.gbps.toFixed(1)} GB/s: ${link.gts} GT/s x${link.width})`;
      if (!t) return { status: 'warn', expected, observed: 'no timing from the self-test', data: { link } satisfies LinkData };
      const share = t.registeredGBps / link.gbps;
      // a link trained below its maximum (a loose card, a riser, a BIOS setting) makes every copy slower
      const trained = link.downtrained ? `; the link is ${link.downtrainedText ?? 'trained below its maximum'}` : '';
      return {
        status: share >= LINK_WARN_FRACTION && !link.downtrained ? 'pass' : 'warn',
        expected: `${expected}, at its maximum speed and width`,
        observed: `registered ${t.registeredGBps.toFixed(2)} GB/s = ${(share * 100).toFixed(1)}% of ${link.gbps.toFixed(1)} GB/s${trained}`,
        data: { link, registeredGBps: t.registeredGBps, share } satisfies LinkData,
      };
    },
  },
];
