// bindings/pci.ts against a fake sysfs tree in a temp folder: the PCIe link as trained and at most (a downtrained
// link named), the device's NUMA node, the nodes online; the root from an argument or MAPPED_REG_SYSFS_ROOT.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { linkEncoding, onlineNodes, parseNodeList, pciDeviceDir, readLink, readNumaNode, sysfsRoot } from '../bindings/pci.js';
import { keepEnv } from './support/kept-env.js';

const root = mkdtempSync(join(tmpdir(), 'mapped-reg-pci-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const kept = keepEnv(['MAPPED_REG_SYSFS_ROOT']);
afterEach(kept.restoreAll);

/** A fake sysfs tree of its own under the temp folder. */
function tree(name: string): string {
  const dir = join(root, name);
  mkdirSync(dir);
  return dir;
}

/** Writes the files of one PCI device of `sysfs` (undefined: no such file). */
function device(sysfs: string, bus: string, files: Record<string, string | undefined>): void {
  const dir = join(sysfs, 'bus/pci/devices', bus);
  mkdirSync(dir, { recursive: true });
  for (const [name, text] of Object.entries(files)) if (text !== undefined) writeFileSync(join(dir, name), text);
}

/** A device's link files: the speed and width it is trained at, then its maximum ones. */
const links = (speed: string, width: string, maxSpeed: string, maxWidth: string): Record<string, string> => ({
  current_link_speed: speed,
  current_link_width: width,
  max_link_speed: maxSpeed,
  max_link_width: maxWidth,
});
const GEN5_X16 = (32 * 16 * 128) / 130 / 8;

describe('the sysfs root', () => {
  it('is /sys by default, MAPPED_REG_SYSFS_ROOT when set; devices are under bus/pci/devices in lower case', () => {
    delete process.env.MAPPED_REG_SYSFS_ROOT;
    expect(sysfsRoot()).toBe('/sys');
    expect(pciDeviceDir('0000:1A:00.0')).toBe('/sys/bus/pci/devices/0000:1a:00.0');
    process.env.MAPPED_REG_SYSFS_ROOT = '/elsewhere';
    expect(sysfsRoot()).toBe('/elsewhere');
    expect(pciDeviceDir('0000:1A:00.0')).toBe('/elsewhere/bus/pci/devices/0000:1a:00.0');
  });

  it('readLink, readNumaNode and onlineNodes read the tree MAPPED_REG_SYSFS_ROOT names', () => {
    const sysfs = tree('env');
    device(sysfs, '0000:41:00.0', { current_link_speed: '8.0 GT/s PCIe', current_link_width: '4', numa_node: '1' });
    mkdirSync(join(sysfs, 'devices/system/node'), { recursive: true });
    writeFileSync(join(sysfs, 'devices/system/node/online'), '0-1\n');
    process.env.MAPPED_REG_SYSFS_ROOT = sysfs;
    expect(readLink('0000:41:00.0')).toMatchObject({ gts: 8, width: 4 });
    expect(readNumaNode('0000:41:00.0')).toBe(1);
    expect(onlineNodes()).toEqual([0, 1]);
  });
});

describe('readLink', () => {
  it('linkEncoding: 8b/10b to Gen2 (5 GT/s), 128b/130b Gen3 to Gen5 (32 GT/s), 242/256 for Gen6', () => {
    expect([2.5, 5, 8, 16, 32, 64].map(linkEncoding)).toEqual([0.8, 0.8, 128 / 130, 128 / 130, 128 / 130, 242 / 256]);
  });

  it('speed x width x encoding / 8, in GB/s; no or unreadable files are a reason', () => {
    const sysfs = tree('current');
    device(sysfs, '0000:41:00.0', { current_link_speed: '32.0 GT/s PCIe\n', current_link_width: '16\n' });
    device(sysfs, '0000:42:00.0', { current_link_speed: '5.0 GT/s PCIe', current_link_width: '8' });
    device(sysfs, '0000:43:00.0', { current_link_speed: 'Unknown', current_link_width: '16' });
    device(sysfs, '0000:44:00.0', { current_link_speed: '16.0 GT/s PCIe', current_link_width: '0' });
    device(sysfs, '0000:46:00.0', { current_link_speed: '16.0 GT/s PCIe' });
    const devices = join(sysfs, 'bus/pci/devices');
    expect(readLink('0000:41:00.0', sysfs)).toEqual({
      gts: 32,
      width: 16,
      gbps: GEN5_X16,
      maxGts: null,
      maxWidth: null,
      maxGbps: null,
      downtrained: false,
    });
    expect((readLink('0000:41:00.0', sysfs) as { gbps: number }).gbps).toBeCloseTo(63.0, 1); // the facts file's Gen5 x16
    expect(readLink('0000:42:00.0', sysfs)).toMatchObject({ gts: 5, width: 8, gbps: 4 });
    expect(readLink('0000:43:00.0', sysfs)).toBe('unreadable PCIe link for 0000:43:00.0: speed "Unknown", width "16"');
    expect(readLink('0000:44:00.0', sysfs)).toBe('unreadable PCIe link for 0000:44:00.0: speed "16.0 GT/s PCIe", width "0"');
    expect(readLink('0000:45:00.0', sysfs)).toBe(`no PCIe link in sysfs for 0000:45:00.0 (${devices}/0000:45:00.0)`);
    expect(readLink('0000:46:00.0', sysfs)).toBe(`no PCIe link in sysfs for 0000:46:00.0 (${devices}/0000:46:00.0)`);
    expect(readLink('0000:41:00.0'.toUpperCase(), sysfs)).toMatchObject({ gts: 32 });
  });

  it('at its maximum: not downtrained, with the maximum GB/s', () => {
    const sysfs = tree('at-max');
    device(sysfs, '0000:41:00.0', links('32.0 GT/s PCIe', '16', '32.0 GT/s PCIe', '16'));
    expect(readLink('0000:41:00.0', sysfs)).toEqual({
      gts: 32,
      width: 16,
      gbps: GEN5_X16,
      maxGts: 32,
      maxWidth: 16,
      maxGbps: GEN5_X16,
      downtrained: false,
    });
  });

  it('a slower speed, or fewer lanes, than the maximum is downtrained, and says so', () => {
    const sysfs = tree('downtrained');
    device(sysfs, '0000:41:00.0', links('16.0 GT/s PCIe', '16', '32.0 GT/s PCIe', '16'));
    device(sysfs, '0000:42:00.0', links('32.0 GT/s PCIe', '8', '32.0 GT/s PCIe', '16'));
    const speed = readLink('0000:41:00.0', sysfs);
    expect(speed).toMatchObject({ gts: 16, maxGts: 32, maxWidth: 16, maxGbps: GEN5_X16, downtrained: true });
    expect(speed).toHaveProperty('downtrainedText', 'trained at 16.0 GT/s x16, below its maximum 32.0 GT/s x16');
    const lanes = readLink('0000:42:00.0', sysfs);
    expect(lanes).toMatchObject({ width: 8, maxWidth: 16, downtrained: true });
    expect(lanes).toHaveProperty('downtrainedText', 'trained at 32.0 GT/s x8, below its maximum 32.0 GT/s x16');
  });

  it('a maximum sysfs cannot tell ("Unknown", absent) is null, and judges nothing', () => {
    const sysfs = tree('max-unknown');
    device(sysfs, '0000:41:00.0', links('16.0 GT/s PCIe', '8', 'Unknown', '16'));
    device(sysfs, '0000:42:00.0', { current_link_speed: '16.0 GT/s PCIe', current_link_width: '16', max_link_speed: '32.0 GT/s PCIe' });
    expect(readLink('0000:41:00.0', sysfs)).toMatchObject({ maxGts: null, maxWidth: 16, maxGbps: null, downtrained: true });
    expect(readLink('0000:41:00.0', sysfs)).toHaveProperty('downtrainedText', 'trained at 16.0 GT/s x8, below its maximum 16.0 GT/s x16');
    const noWidth = readLink('0000:42:00.0', sysfs);
    expect(noWidth).toMatchObject({ maxGts: 32, maxWidth: null, maxGbps: null, downtrained: true });
    expect(noWidth).toHaveProperty('downtrainedText', 'trained at 16.0 GT/s x16, below its maximum 32.0 GT/s x16');
    device(sysfs, '0000:43:00.0', { current_link_speed: '16.0 GT/s PCIe', current_link_width: '16' });
    expect(readLink('0000:43:00.0', sysfs)).not.toHaveProperty('downtrainedText');
  });
});

describe('readNumaNode', () => {
  it('the node of numa_node; -1, garbage or no file is null', () => {
    const sysfs = tree('numa');
    device(sysfs, '0000:41:00.0', { numa_node: '1\n' });
    device(sysfs, '0000:42:00.0', { numa_node: '-1\n' });
    device(sysfs, '0000:43:00.0', { numa_node: 'x' });
    device(sysfs, '0000:44:00.0', {});
    expect(readNumaNode('0000:41:00.0', sysfs)).toBe(1);
    expect(readNumaNode('0000:41:00.0'.toUpperCase(), sysfs)).toBe(1);
    expect(readNumaNode('0000:42:00.0', sysfs)).toBeNull();
    expect(readNumaNode('0000:43:00.0', sysfs)).toBeNull();
    expect(readNumaNode('0000:44:00.0', sysfs)).toBeNull();
    expect(readNumaNode('0000:99:00.0', sysfs)).toBeNull();
  });
});

describe('onlineNodes', () => {
  it('parses the kernel list ("0-1,3"); no file, or one that is not a list, is one node [0]', () => {
    const online = (text: string | undefined): number[] => {
      const sysfs = mkdtempSync(join(root, 'online-'));
      mkdirSync(join(sysfs, 'devices/system/node'), { recursive: true });
      if (text !== undefined) writeFileSync(join(sysfs, 'devices/system/node/online'), text);
      return onlineNodes(sysfs);
    };
    expect(online('0-1,3\n')).toEqual([0, 1, 3]);
    expect(online('0\n')).toEqual([0]);
    expect(online('2')).toEqual([2]);
    expect(online('0-3')).toEqual([0, 1, 2, 3]);
    expect(online(undefined)).toEqual([0]);
    expect(online('garbage')).toEqual([0]);
    expect(online('')).toEqual([0]);
  });

  it('parseNodeList refuses what is not a list', () => {
    expect(parseNodeList('1,4-5')).toEqual([1, 4, 5]);
    expect(parseNodeList('3-1')).toBeNull();
    expect(parseNodeList('0,,1')).toBeNull();
    expect(parseNodeList('a')).toBeNull();
  });
});
