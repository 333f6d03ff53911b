// Other users of a GPU and its link (bindings/gpu-users.ts), through the real binding against the NVML double
// (test/double/nvml_double.c). The double reads its configuration at each nvmlInit_v2, and openGpuUsers calls
// nvmlInit_v2 once per open: each test sets the environment, opens, samples, closes.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import koffi from 'koffi';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type GpuUsersMonitor, amdSmiBdf, openGpuUsers } from '../bindings/gpu-users.js';
import { addOwnChild } from '../bindings/own-children.js';
import { buildDoubles } from './double/build.js';
import { cleanEnv } from './support/command.js';

const VARS = [
  'MAPPED_REG_NVML_LIBRARY',
  'MAPPED_REG_AMDSMI_LIBRARY',
  'MAPPED_REG_DOUBLE_DEVICES',
  'MAPPED_REG_DOUBLE_NVML_PROCESSES',
  'MAPPED_REG_DOUBLE_NVML_PROCESSES_1',
  'MAPPED_REG_DOUBLE_NVML_PCIE',
  'MAPPED_REG_DOUBLE_NVML_PCIE_1',
  'MAPPED_REG_DOUBLE_NVML_FAULTS',
];

let nvml: string;
let tmp: string;
let doubleCalls: (name: string) => number;

beforeAll(() => {
  nvml = buildDoubles().nvml;
  tmp = mkdtempSync(join(tmpdir(), 'gpu-users-'));
  doubleCalls = koffi.load(nvml).func('int double_calls(const char *name)') as (name: string) => number;
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
afterEach(() => {
  for (const v of VARS) delete process.env[v];
});

/** Configures the double (and the binding's library variable) for the next open. */
function configure(vars: Record<string, string>): void {
  for (const v of VARS) delete process.env[v];
  process.env['MAPPED_REG_NVML_LIBRARY'] = nvml;
  Object.assign(process.env, vars);
}

function monitor(busId = '0000:00:00.0'): GpuUsersMonitor {
  const m = openGpuUsers('cuda', busId);
  if ('note' in m) throw new Error(`expected a monitor, got the note: ${m.note}`);
  return m;
}

/** The monitor of the double's device 0 configured with `vars`, handed to `look`, closed whatever `look` does. */
function withMonitor(vars: Record<string, string>, look: (m: GpuUsersMonitor) => void): void {
  configure(vars);
  const m = monitor();
  try {
    look(m);
  } finally {
    m.close();
  }
}

describe('openGpuUsers (NVML)', () => {
  it('lists the processes on the device with their names and MiB, and the PCIe traffic in MB/s', () => {
    withMonitor({ MAPPED_REG_DOUBLE_NVML_PROCESSES: '4242:trainer:774,4343:viewer:-', MAPPED_REG_DOUBLE_NVML_PCIE: 'rx=59000,tx=1200' }, (m) => {
      expect(m.source).toBe('nvml');
      expect(m.sample([])).toEqual({
        source: 'nvml',
        processes: [
          { pid: 4242, name: 'trainer', usedMiB: 774, kind: 'compute' },
          { pid: 4343, name: 'viewer', usedMiB: null, kind: 'compute' },
        ],
        pcieRxMBps: 59000,
        pcieTxMBps: 1200,
      });
    });
  });

  it('leaves out the excluded pids (our own), and lists them when not excluded', () => {
    withMonitor({ MAPPED_REG_DOUBLE_NVML_PROCESSES: 'self:us:100,parent:runner:5,77:other:1' }, (m) => {
      expect(m.sample([]).processes.map((p) => p.pid)).toEqual([process.pid, process.ppid, 77]);
      expect(m.sample([process.pid, process.ppid]).processes).toEqual([{ pid: 77, name: 'other', usedMiB: 1, kind: 'compute' }]);
    });
  });

  it("leaves out this process's own helper children (the truncation child started early) while they are counted as its own", () => {
    withMonitor({ MAPPED_REG_DOUBLE_NVML_PROCESSES: '4711:node:300,77:other:1' }, (m) => {
      expect(m.sample([]).processes.map((p) => p.pid)).toEqual([4711, 77]);
      const forget = addOwnChild(() => 4711);
      try {
        expect(m.sample([]).processes.map((p) => p.pid)).toEqual([77]);
      } finally {
        forget();
      }
      expect(m.sample([]).processes.map((p) => p.pid)).toEqual([4711, 77]);
    });
  });

  it('lists a pid with a compute and a graphics context once, as compute; a graphics-only process as graphics', () => {
    withMonitor({ MAPPED_REG_DOUBLE_NVML_PROCESSES: '500:both:-,500:both:64:graphics,600:desktop:32:graphics' }, (m) => {
      expect(m.sample([]).processes).toEqual([
        { pid: 500, name: 'both', usedMiB: 64, kind: 'compute' },
        { pid: 600, name: 'desktop', usedMiB: 32, kind: 'graphics' },
      ]);
    });
  });

  it('names a process NVML cannot name from /proc/<pid>/comm, and one neither knows with an empty name', () => {
    withMonitor({ MAPPED_REG_DOUBLE_NVML_PROCESSES: 'self::10,4000000::1' }, (m) => {
      const comm = spawnSync('cat', [`/proc/${process.pid}/comm`], { encoding: 'utf8' }).stdout.trim();
      expect(comm).not.toBe('');
      expect(m.sample([]).processes).toEqual([
        { pid: process.pid, name: comm, usedMiB: 10, kind: 'compute' },
        { pid: 4000000, name: '', usedMiB: 1, kind: 'compute' },
      ]);
    });
  });

  it('reads every process when there are more than the first buffer holds (INSUFFICIENT_SIZE)', () => {
    withMonitor({ MAPPED_REG_DOUBLE_NVML_PROCESSES: '9:listed:2', MAPPED_REG_DOUBLE_NVML_FAULTS: 'many_processes' }, (m) => {
      const { processes } = m.sample([]);
      expect(processes).toHaveLength(301);
      expect(processes[0]).toEqual({ pid: 9, name: 'listed', usedMiB: 2, kind: 'compute' });
      expect(processes[300]).toEqual({ pid: 3000299, name: 'many299', usedMiB: 1, kind: 'compute' });
      expect(new Set(processes.map((p) => p.pid)).size).toBe(301);
    });
  });
});

describe('openGpuUsers (NVML): several devices, and what a device cannot report', () => {
  it('reads each device by its bus id, a device of its own list over the general one', () => {
    configure({
      MAPPED_REG_DOUBLE_DEVICES: '2',
      MAPPED_REG_DOUBLE_NVML_PROCESSES: '10:everywhere:1',
      MAPPED_REG_DOUBLE_NVML_PROCESSES_1: '11:second:2',
      MAPPED_REG_DOUBLE_NVML_PCIE: 'rx=5',
      MAPPED_REG_DOUBLE_NVML_PCIE_1: 'rx=7,tx=3',
    });
    const first = monitor('0000:00:00.0');
    const second = monitor('0000:00:01.0');
    try {
      expect(first.sample([])).toMatchObject({ processes: [{ pid: 10, name: 'everywhere' }], pcieRxMBps: 5, pcieTxMBps: 0 });
      expect(second.sample([])).toMatchObject({ processes: [{ pid: 11, name: 'second' }], pcieRxMBps: 7, pcieTxMBps: 3 });
    } finally {
      first.close();
      second.close();
    }
  });

  it('reads the two ways of the link at the same time (NVML samples each for 20 ms): each call met the other in flight (paired_throughput)', () => {
    withMonitor({ MAPPED_REG_DOUBLE_NVML_PCIE: 'rx=59000,tx=1200', MAPPED_REG_DOUBLE_NVML_FAULTS: 'paired_throughput' }, (m) => {
      const before = doubleCalls('paired_throughput');
      const s = m.sample([]);
      expect({ rx: s.pcieRxMBps, tx: s.pcieTxMBps }).toEqual({ rx: 59000, tx: 1200 });
      expect(doubleCalls('paired_throughput') - before).toBe(2);
      // and again: the receive side's cell is set afresh for each look
      expect(m.sample([]).pcieRxMBps).toBe(59000);
      expect(doubleCalls('paired_throughput') - before).toBe(4);
    });
  });

  it('gives null traffic when the device cannot report it (no_throughput), and still the processes', () => {
    withMonitor({ MAPPED_REG_DOUBLE_NVML_PROCESSES: '12:p:3', MAPPED_REG_DOUBLE_NVML_FAULTS: 'no_throughput' }, (m) => {
      expect(m.sample([])).toEqual({ source: 'nvml', processes: [{ pid: 12, name: 'p', usedMiB: 3, kind: 'compute' }], pcieRxMBps: null, pcieTxMBps: null });
    });
  });

  it('lists no graphics processes on a device that has no graphics (NOT_SUPPORTED), the compute ones still', () => {
    withMonitor({ MAPPED_REG_DOUBLE_NVML_PROCESSES: '13:c:1,14:g:2:graphics', MAPPED_REG_DOUBLE_NVML_FAULTS: 'no_graphics' }, (m) => {
      expect(m.sample([]).processes).toEqual([{ pid: 13, name: 'c', usedMiB: 1, kind: 'compute' }]);
    });
  });

  it('throws from sample, naming the call and the error, when the process list cannot be read (never an empty list)', () => {
    withMonitor({ MAPPED_REG_DOUBLE_NVML_PROCESSES: '13:c:1', MAPPED_REG_DOUBLE_NVML_FAULTS: 'list_fails' }, (m) => {
      expect(() => m.sample([])).toThrow('NVML: nvmlDeviceGetComputeRunningProcesses_v3 failed: 4 NVML_ERROR_NO_PERMISSION (Insufficient Permissions)');
    });
  });
});

describe('openGpuUsers (NVML): init and shutdown, and the notes when it cannot open', () => {
  it('initializes once per open, not per sample, and shuts down on close (once)', () => {
    configure({});
    const inits = doubleCalls('nvmlInit_v2');
    const shutdowns = doubleCalls('nvmlShutdown');
    const m = monitor();
    for (let i = 0; i < 3; i++) m.sample([]);
    expect(doubleCalls('nvmlInit_v2')).toBe(inits + 1);
    expect(doubleCalls('nvmlShutdown')).toBe(shutdowns);
    m.close();
    m.close();
    expect(doubleCalls('nvmlShutdown')).toBe(shutdowns + 1);
    expect(() => m.sample([])).toThrow(/after close/);
  });

  it('is a note, not a throw, when init fails', () => {
    configure({ MAPPED_REG_DOUBLE_NVML_FAULTS: 'init_fails' });
    expect(openGpuUsers('cuda', '0000:00:00.0')).toEqual({ note: 'NVML: nvmlInit_v2 failed: 999 NVML_ERROR_UNKNOWN (Unknown Error)' });
  });

  it('is a note when no device has the bus id, and NVML is shut down again', () => {
    configure({});
    const shutdowns = doubleCalls('nvmlShutdown');
    expect(openGpuUsers('cuda', '0000:00:05.0')).toEqual({
      note: 'NVML: no device at 0000:00:05.0: nvmlDeviceGetHandleByPciBusId_v2 failed: 6 NVML_ERROR_NOT_FOUND (Not Found)',
    });
    expect(doubleCalls('nvmlShutdown')).toBe(shutdowns + 1);
  });

  it('is a note when the library is missing', () => {
    const missing = join(tmp, 'no-such-libnvidia-ml.so.1');
    configure({ MAPPED_REG_NVML_LIBRARY: missing });
    expect(openGpuUsers('cuda', '0000:00:00.0')).toEqual({ note: `NVML: ${missing} not found` });
  });

  it('is a note when the library is not NVML (a symbol is missing)', () => {
    configure({ MAPPED_REG_NVML_LIBRARY: buildDoubles().cuda });
    expect(openGpuUsers('cuda', '0000:00:00.0')).toEqual({ note: `NVML: ${buildDoubles().cuda} is not NVML (no symbol nvmlInit_v2)` });
  });
});

describe('openGpuUsers (other backends)', () => {
  it('is a note for AMD SMI when the library is missing, or is not AMD SMI', () => {
    const missing = join(tmp, 'no-such-libamd_smi.so');
    process.env['MAPPED_REG_AMDSMI_LIBRARY'] = missing;
    expect(openGpuUsers('hip', '0000:03:00.0')).toEqual({ note: `AMD SMI: ${missing} not found` });
    process.env['MAPPED_REG_AMDSMI_LIBRARY'] = nvml;
    expect(openGpuUsers('hip', '0000:03:00.0')).toEqual({ note: `AMD SMI: ${nvml} is not AMD SMI (no symbol amdsmi_init)` });
  });

  it('is a note for a backend without a management library', () => {
    expect(openGpuUsers('opencl', '0000:00:00.0')).toEqual({ note: "no management library for backend 'opencl' (cuda: NVML, hip: AMD SMI)" });
  });

  it('packs a bus id into amdsmi_bdf_t (function bits 0-2, device 3-7, bus 8-15, domain from 16)', () => {
    expect(amdSmiBdf('0000:03:00.0')).toBe(0x300n);
    expect(amdSmiBdf('0001:c1:1f.7')).toBe((1n << 16n) | (0xc1n << 8n) | (31n << 3n) | 7n);
    expect(amdSmiBdf('0000:03:20.0')).toBeNull();
    expect(amdSmiBdf('03:00.0')).toBeNull();
  });
});

describe('the NVML double: malformed configuration', () => {
  // A fresh process: the double prints to the stderr of the process that loads it.
  const initIn = (env: Record<string, string>): { status: number | null; stdout: string; stderr: string } =>
    spawnSync(
      process.execPath,
      ['--input-type=module', '-e', `import koffi from 'koffi'; const lib = koffi.load(process.argv[1]); console.log(lib.func('int nvmlInit_v2(void)')());`, nvml],
      { cwd: join(import.meta.dirname, '..'), env: cleanEnv(env), encoding: 'utf8' },
    );

  it.each([
    ['MAPPED_REG_DOUBLE_NVML_PROCESSES', '12:name'],
    ['MAPPED_REG_DOUBLE_NVML_PROCESSES', 'x:name:1'],
    ['MAPPED_REG_DOUBLE_NVML_PROCESSES', '12:name:1:compute'],
    ['MAPPED_REG_DOUBLE_NVML_PROCESSES_0', '12:name:1,'],
    ['MAPPED_REG_DOUBLE_NVML_PCIE', 'rx=1.5'],
    ['MAPPED_REG_DOUBLE_NVML_PCIE', 'up=1'],
    ['MAPPED_REG_DOUBLE_NVML_FAULTS', 'slow'],
    ['MAPPED_REG_DOUBLE_DEVICES', '17'],
  ])('%s=%s: init returns INVALID_ARGUMENT (2) with one line on stderr naming it', (name, value) => {
    const r = initIn({ [name]: value });
    expect(r.status).toBe(0);
    expect(r.stdout.trim()).toBe('2');
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`${name} '`);
  });

  it('a well-formed configuration initializes (0) silently', () => {
    const r = initIn({ MAPPED_REG_DOUBLE_NVML_PROCESSES: '12:name:1,self:me:-:graphics', MAPPED_REG_DOUBLE_NVML_PCIE: 'rx=1,tx=2', MAPPED_REG_DOUBLE_NVML_FAULTS: 'no_throughput,many_processes' });
    expect(r.stdout.trim()).toBe('0');
    expect(r.stderr).toBe('');
  });
});
