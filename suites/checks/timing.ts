// timing.margin (the spec's margin) and timing.link (the registered copy against the PCIe link's limit).
import { readFileSync } from 'node:fs';
import type { Check, CheckContext } from '../check.js';
import { probeOnce } from '../context.js';
import { needsSelfTest } from './probe.js';

/**
 * Below this share of the PCIe link's limit the registered copy is a `warn`: a discrete GPU copying from
 * pinned memory reaches 80 to 90% of it (the H200 of the facts file: 88%), so under 70% something (a narrower
 * link than negotiated, a slow IOMMU path, a throttled copy engine) deserves a look.
 */
export const LINK_WARN_FRACTION = 0.7;

/** Usable bits per transferred bit for a PCIe speed in GT/s: 8b/10b up to Gen2, 128b/130b Gen3 to Gen5, FLIT (242/256) for Gen6. */
export function linkEncoding(gts: number): number {
  if (gts <= 5) return 8 / 10;
  if (gts <= 32) return 128 / 130;
  return 242 / 256;
}

export interface Link {
  gts: number;
  width: number;
  gbps: number;
}

/** The link of a PCI device from sysfs (`current_link_speed` like "32.0 GT/s PCIe", `current_link_width` like "16"). */
export function readLink(pciBusId: string, sysfs = '/sys/bus/pci/devices'): Link | string {
  const dir = `${sysfs}/${pciBusId.toLowerCase()}`;
  let speed: string;
  let width: string;
  try {
    speed = readFileSync(`${dir}/current_link_speed`, 'utf8').trim();
    width = readFileSync(`${dir}/current_link_width`, 'utf8').trim();
  } catch {
    return `no PCIe link in sysfs for ${pciBusId} (${dir})`;
  }
  const gts = Number.parseFloat(speed);
  const lanes = Number.parseInt(width, 10);
  if (!(gts > 0) || !(lanes > 0)) return `unreadable PCIe link for ${pciBusId}: speed "${speed}", width "${width}"`;
  return { gts, width: lanes, gbps: (gts * lanes * linkEncoding(gts)) / 8 };
}

function linkApplies(ctx: CheckContext): true | string {
  const self = needsSelfTest(ctx);
  if (self !== true) return self;
  if (!ctx.device.pciBusId) return 'the device has no PCI bus id';
  const link = readLink(ctx.device.pciBusId);
  return typeof link === 'string' ? link : true;
}

export const timingChecks: Check[] = [
  {
    id: 'timing.margin',
    suite: 'timing',
    // the timing of probe.verdict's self-test
    needs: ['probe.verdict'],
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
        data: { ...t },
      };
    },
  },
  {
    id: 'timing.link',
    suite: 'timing',
    // the timing of probe.verdict's self-test
    needs: ['probe.verdict'],
    title: `registered copy against the PCIe link's limit (warn below ${LINK_WARN_FRACTION * 100}%)`,
    applies: linkApplies,
    run: (ctx) => {
      const link = readLink(ctx.device.pciBusId!) as Link;
      const t = probeOnce(ctx).report.timing;
      const expected = `registered >= ${LINK_WARN_FRACTION * 100}% of the link (${link.gbps.toFixed(1)} GB/s: ${link.gts} GT/s x${link.width})`;
      if (!t) return { status: 'warn', expected, observed: 'no timing from the self-test', data: { link } };
      const share = t.registeredGBps / link.gbps;
      return {
        status: share >= LINK_WARN_FRACTION ? 'pass' : 'warn',
        expected,
        observed: `registered ${t.registeredGBps.toFixed(2)} GB/s = ${(share * 100).toFixed(1)}% of ${link.gbps.toFixed(1)} GB/s`,
        data: { link, registeredGBps: t.registeredGBps, share },
      };
    },
  },
];
