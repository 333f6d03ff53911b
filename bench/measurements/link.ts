// The PCIe link (`link`; docs/bench.md): its limit read from sysfs as timing.link reads it, and the registered
// copy's share of it. Read once the device is released.
import { readLink } from '../../bindings/pci.js';
import type { DeviceContext } from '../session.js';
import { type Measurement, always } from './measurement.js';

export const link: Measurement<DeviceContext> = {
  key: 'link',
  title: 'PCIe link',
  description: "the PCIe link's limit (sysfs: speed x width, less the encoding), and the registered copy's best GB/s over it",
  applies: always,
  run(c) {
    const d = c.device;
    const result = c.result;
    const l = d.pciBusId ? readLink(d.pciBusId) : 'the device has no PCI bus id';
    result.link = typeof l === 'string' ? { error: l } : { ...l, ...(result.copies.registered ? { registeredShare: result.copies.registered.bestGBps / l.gbps } : {}) };
  },
};
