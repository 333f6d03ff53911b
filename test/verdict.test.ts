import { describe, expect, it } from 'vitest';
import {
  Device_kind_unknown,
  Inconclusive,
  Integrated_gpu,
  Kernel_hazard,
  Not_measured,
  Not_needed,
  Refused,
  Still_registered,
  Too_slow,
  Usable,
  Wrong_bytes,
  cacheable,
  isFatal,
  Interrupted,
  OutOfMemory,
  errorText,
  refusalToString,
  verdictFromJson,
  verdictJson,
  verdictToString,
  type Verdict,
} from '../src/index.js';

const every: [Verdict, string, boolean][] = [
  [Usable, 'Usable', true],
  [Refused(Wrong_bytes), 'Refused (Wrong_bytes)', true],
  [Not_needed('a CPU device'), 'Not_needed (a CPU device)', false],
  [Refused(Integrated_gpu), 'Refused (Integrated_gpu)', false],
  [Refused(Device_kind_unknown), 'Refused (Device_kind_unknown)', false],
  [Refused(Kernel_hazard('Sarek #503')), 'Refused (Kernel_hazard (Sarek #503))', false],
  [Refused(Not_measured('OpenCL GPU')), 'Refused (Not_measured (OpenCL GPU))', false],
  [Too_slow('0.5 of staged'), 'Too_slow (0.5 of staged)', false],
  [Inconclusive('clock'), 'Inconclusive (clock)', false],
  [Still_registered('window 1'), 'Still_registered (window 1)', false],
];

describe('verdicts', () => {
  it.each(every)('%j prints as %s, cacheable %s', (v, text, isCacheable) => {
    expect(verdictToString(v)).toBe(text);
    expect(cacheable(v)).toBe(isCacheable);
  });

  it('cacheable is true only for Usable and Refused Wrong_bytes', () => {
    expect(every.filter(([v]) => cacheable(v)).map(([, t]) => t)).toEqual(['Usable', 'Refused (Wrong_bytes)']);
  });

  it('refusalToString names each refusal', () => {
    expect([Integrated_gpu, Device_kind_unknown, Wrong_bytes, Kernel_hazard('k'), Not_measured('m')].map(refusalToString)).toEqual([
      'Integrated_gpu',
      'Device_kind_unknown',
      'Wrong_bytes',
      'Kernel_hazard (k)',
      'Not_measured (m)',
    ]);
  });

  it('verdictFromJson reads back what verdictJson wrote, every verdict and refusal', () => {
    for (const [v] of every) expect(verdictFromJson(verdictJson(v))).toEqual(v);
    expect(() => verdictFromJson({ kind: 'Refused', refusal: 'Sideways', text: 'Refused (Sideways)' })).toThrow(/unknown refusal Sideways/);
  });

  it('keeps the spec constructor names as kinds', () => {
    expect(every.map(([v]) => v.kind)).toEqual(['Usable', 'Refused', 'Not_needed', 'Refused', 'Refused', 'Refused', 'Refused', 'Too_slow', 'Inconclusive', 'Still_registered']);
  });
});

describe('fatal errors', () => {
  it('recognises a stack overflow, a failed host allocation, OutOfMemory and Interrupted, and nothing else', () => {
    let overflow: unknown;
    const recurse = (n: number): number => recurse(n + 1) + 1;
    try {
      recurse(0);
    } catch (e) {
      overflow = e;
    }
    expect(isFatal(overflow)).toBe(true);
    expect(isFatal(new RangeError('Array buffer allocation failed'))).toBe(true);
    expect(isFatal(new OutOfMemory())).toBe(true);
    expect(isFatal(new Interrupted())).toBe(true);
    expect(isFatal(new RangeError('offset out of bounds'))).toBe(false);
    expect(isFatal(new Error('out of memory'))).toBe(false);
    expect(isFatal('Maximum call stack size exceeded')).toBe(false);
  });

  it('errorText reads errors and other thrown values', () => {
    expect(errorText(new Error('e'))).toBe('e');
    expect(errorText(42)).toBe('42');
    expect(new Interrupted().name).toBe('Interrupted');
    expect(new OutOfMemory('x').message).toBe('x');
  });
});
