// bindings/pressure.ts against fake pressure files in a temp folder: the kernel's format parsed, a missing or
// malformed file a null with a note (never a throw), the root from an argument or MAPPED_REG_PROC_ROOT.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { parsePressure, pressureRoot, readPressure } from '../bindings/pressure.js';
import { keepEnv } from './support/kept-env.js';

const work = mkdtempSync(join(tmpdir(), 'mapped-reg-pressure-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
const kept = keepEnv(['MAPPED_REG_PROC_ROOT']);
afterEach(kept.restoreAll);

/** A pressure folder of its own with these files (undefined: no such file). */
function folder(files: { cpu?: string; memory?: string }): string {
  const dir = mkdtempSync(join(work, 'pressure-'));
  if (files.cpu !== undefined) writeFileSync(join(dir, 'cpu'), files.cpu);
  if (files.memory !== undefined) writeFileSync(join(dir, 'memory'), files.memory);
  return dir;
}

const CPU = 'some avg10=37.99 avg60=24.02 avg300=11.18 total=46687105\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n';
const MEMORY = 'some avg10=2.50 avg60=1.00 avg300=0.20 total=1234\nfull avg10=1.25 avg60=0.50 avg300=0.10 total=99\n';

describe('readPressure', () => {
  it("reads some avg10 of cpu, and some and full avg10 of memory, in the kernel's format", () => {
    expect(readPressure(folder({ cpu: CPU, memory: MEMORY }))).toEqual({
      cpu: { someAvg10: 37.99 },
      memory: { someAvg10: 2.5, fullAvg10: 1.25 },
    });
  });

  it('an older kernel whose cpu file has no full line reads the same', () => {
    const dir = folder({ cpu: 'some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n', memory: MEMORY });
    expect(readPressure(dir)).toEqual({ cpu: { someAvg10: 0 }, memory: { someAvg10: 2.5, fullAvg10: 1.25 } });
  });

  it('a missing file is null with a note, never a throw; the other is still read', () => {
    const noMemory = folder({ cpu: CPU });
    expect(readPressure(noMemory)).toEqual({
      cpu: { someAvg10: 37.99 },
      memory: null,
      note: `${noMemory}/memory: no such file (a kernel without PSI?)`,
    });
    const none = join(work, 'no-such-folder');
    expect(readPressure(none)).toEqual({
      cpu: null,
      memory: null,
      note: `${none}/cpu: no such file (a kernel without PSI?); ${none}/memory: no such file (a kernel without PSI?)`,
    });
  });

  it('a file not in the format, or without the lines asked for, is null with a note', () => {
    const dir = folder({ cpu: 'garbage\n', memory: 'some avg10=1.00 avg60=0.00 avg300=0.00 total=0\n' });
    expect(readPressure(dir)).toEqual({
      cpu: null,
      memory: null,
      note: `${dir}/cpu: not in the kernel's format; ${dir}/memory: no "some" and "full" lines`,
    });
  });

  it('a file that cannot be read (a folder in its place) is null with the reason', () => {
    const dir = folder({ memory: MEMORY });
    mkdirSync(join(dir, 'cpu'));
    const p = readPressure(dir);
    expect(p.cpu).toBeNull();
    expect(p.memory).toEqual({ someAvg10: 2.5, fullAvg10: 1.25 });
    expect(p.note).toBe(`${dir}/cpu: cannot be read (EISDIR)`);
  });

  it('the root: /proc/pressure by default, MAPPED_REG_PROC_ROOT/pressure when set', () => {
    delete process.env.MAPPED_REG_PROC_ROOT;
    expect(pressureRoot()).toBe('/proc/pressure');
    const proc = mkdtempSync(join(work, 'proc-'));
    const dir = join(proc, 'pressure');
    mkdirSync(dir);
    writeFileSync(join(dir, 'cpu'), CPU);
    writeFileSync(join(dir, 'memory'), MEMORY);
    process.env.MAPPED_REG_PROC_ROOT = proc;
    expect(pressureRoot()).toBe(dir);
    expect(readPressure()).toEqual({ cpu: { someAvg10: 37.99 }, memory: { someAvg10: 2.5, fullAvg10: 1.25 } });
  });
});

describe('parsePressure', () => {
  it('the avg10 of each line by its first word; other lines left out', () => {
    expect([...parsePressure(MEMORY)]).toEqual([
      ['some', 2.5],
      ['full', 1.25],
    ]);
    expect(parsePressure('some avg10=x avg60=0.00\nnoise\n').size).toBe(0);
  });
});
