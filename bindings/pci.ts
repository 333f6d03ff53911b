// What sysfs says of a PCI device and of the host's memory nodes: the PCIe link (as trained and at most), the
// device's NUMA node, the nodes online. The root is env MAPPED_REG_SYSFS_ROOT (default /sys), read at each call,
// so that tests (and the driver double) can serve a fake tree. Each file is read without blocking and bounded
// (bindings/small-file.ts): a named pipe in sysfs's place is "cannot be read", never a hang.
import { readSmallFile } from './small-file.js';

/** The sysfs root: env MAPPED_REG_SYSFS_ROOT, else /sys. */
export function sysfsRoot(): string {
  return process.env.MAPPED_REG_SYSFS_ROOT || '/sys';
}

/** The folder of a PCI device: `<root>/bus/pci/devices/<bus id in lower case>`. */
export function pciDeviceDir(pciBusId: string, root = sysfsRoot()): string {
  return `${root}/bus/pci/devices/${pciBusId.toLowerCase()}`;
}

/** Usable bits per transferred bit for a PCIe speed in GT/s: 8b/10b up to Gen2, 128b/130b Gen3 to Gen5, FLIT (242/256) for Gen6. */
export function linkEncoding(gts: number): number {
  if (gts <= 5) return 8 / 10;
  if (gts <= 32) return 128 / 130;
  return 242 / 256;
}

export interface Link {
  /** Current speed in GT/s and width in lanes, and what they carry in GB/s. */
  gts: number;
  width: number;
  gbps: number;
  /** What the link can train at (max_link_speed, max_link_width); null when sysfs does not say. */
  maxGts: number | null;
  maxWidth: number | null;
  /** GB/s at the maximum speed and width; null unless both are known. */
  maxGbps: number | null;
  /** The current speed or width is below the maximum. */
  downtrained: boolean;
  /** When downtrained: "trained at 16.0 GT/s x16, below its maximum 32.0 GT/s x16". */
  downtrainedText?: string;
}

function gbps(gts: number, width: number): number {
  return (gts * width * linkEncoding(gts)) / 8;
}

/** A sysfs file's text, trimmed; undefined when it cannot be read (missing, not a regular file, too long). */
function readText(path: string): string | undefined {
  const read = readSmallFile(path);
  return 'text' in read ? read.text.trim() : undefined;
}

/**
 * The most a link can be, beyond any PCIe generation to come (Gen6 is 64 GT/s, x32 the widest the standard
 * defines): a figure above is not a link sysfs describes, and would make GB/s figures that do not hold (a speed
 * of 1e309 parses as Infinity, which JSON writes as null).
 */
export const LINK_LIMITS = { gts: 1024, width: 64 } as const;

/** A speed ("32.0 GT/s PCIe") or width ("16") in (0, max], else null ("Unknown", "0", absurd, missing). */
function positive(text: string | undefined, parse: (s: string) => number, max: number): number | null {
  if (text === undefined) return null;
  const n = parse(text);
  return n > 0 && n <= max ? n : null;
}

const speedOf = (s: string | undefined): number | null => positive(s, Number.parseFloat, LINK_LIMITS.gts);
const widthOf = (s: string | undefined): number | null => positive(s, (x) => Number.parseInt(x, 10), LINK_LIMITS.width);

/**
 * The link of a PCI device from sysfs (`current_link_speed` like "32.0 GT/s PCIe", `current_link_width` like
 * "16", and their `max_link_*`). No current link, or one that cannot be read or is beyond LINK_LIMITS, is a
 * reason (a string): every figure of a Link is finite.
 */
export function readLink(pciBusId: string, root = sysfsRoot()): Link | string {
  const dir = pciDeviceDir(pciBusId, root);
  const speed = readText(`${dir}/current_link_speed`);
  const width = readText(`${dir}/current_link_width`);
  if (speed === undefined || width === undefined) return `no PCIe link in sysfs for ${pciBusId} (${dir})`;
  const gts = speedOf(speed);
  const lanes = widthOf(width);
  if (gts === null || lanes === null) return `unreadable PCIe link for ${pciBusId}: speed "${speed.slice(0, 40)}", width "${width.slice(0, 40)}"`;
  const maxGts = speedOf(readText(`${dir}/max_link_speed`));
  const maxWidth = widthOf(readText(`${dir}/max_link_width`));
  const downtrained = (maxGts !== null && gts < maxGts) || (maxWidth !== null && lanes < maxWidth);
  const link: Link = {
    gts,
    width: lanes,
    gbps: gbps(gts, lanes),
    maxGts,
    maxWidth,
    maxGbps: maxGts !== null && maxWidth !== null ? gbps(maxGts, maxWidth) : null,
    downtrained,
  };
  if (downtrained) {
    link.downtrainedText =
      `trained at ${gts.toFixed(1)} GT/s x${lanes}, below its maximum ${(maxGts ?? gts).toFixed(1)} GT/s x${maxWidth ?? lanes}`;
  }
  return link;
}

/** The NUMA node of a PCI device (`numa_node`); null when sysfs does not know it (-1) or has no such file. */
export function readNumaNode(pciBusId: string, root = sysfsRoot()): number | null {
  const text = readText(`${pciDeviceDir(pciBusId, root)}/numa_node`);
  if (text === undefined || !/^\d+$/.test(text)) return null;
  return Number(text);
}

/** A kernel node list ("0-1,3") as numbers; null when it is not one. */
export function parseNodeList(text: string): number[] | null {
  const nodes: number[] = [];
  for (const part of text.trim().split(',')) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part);
    if (!m) return null;
    const first = Number(m[1]);
    const last = m[2] === undefined ? first : Number(m[2]);
    if (last < first) return null;
    for (let n = first; n <= last; n++) nodes.push(n);
  }
  return nodes;
}

/**
 * The memory nodes online (`<root>/devices/system/node/online`, "0-1,3"). A kernel without NUMA has no such
 * file: one node, [0]; so is a file that cannot be read as a node list.
 */
export function onlineNodes(root = sysfsRoot()): number[] {
  const text = readText(`${root}/devices/system/node/online`);
  return (text === undefined ? null : parseNodeList(text)) ?? [0];
}
