// One driver call through koffi (`driverCall`; docs/bench.md): the device's integrated attribute, through the
// bindings' checked wrapper, in batches of 1000 (a sample is the batch's mean).
import type { DeviceSession } from '../session.js';
import { time } from '../timing.js';
import { type Measurement, always } from './measurement.js';

const BATCH = 1000;

export const driverCall: Measurement<DeviceSession> = {
  key: 'driverCall',
  title: 'driver call',
  description: 'cuDeviceGetAttribute / hipDeviceGetAttribute through koffi: the cost of crossing to the driver and back',
  applies: always,
  run(s) {
    // the call is the backend's (its module's kit), so a new driver is not timed as another's
    const { call, query: one } = s.native.kit.attributeCall();
    const st = time(
      call,
      () => {
        const t0 = performance.now();
        for (let i = 0; i < BATCH; i++) one();
        const t = performance.now() - t0;
        return { overriddenDuration: t / BATCH, overriddenIterationCost: t };
      },
      { iterations: 50, timeMs: 200 },
    );
    s.result.driverCall = { call, meanUs: st.meanMs * 1000, medianUs: st.medianMs * 1000, bestUs: st.bestMs * 1000, callsPerSample: BATCH, samples: st.samples };
  },
};
