// What the machine was seen doing is capped in every report that repeats it (issue 30), like the rest of the
// repeated text (reporters/cap.ts): with 300 processes on the GPU (the NVML double's many_processes), the
// terminal's machine line was 14,957 characters and JUnit's load.why and load.processes 8,635. The JSON keeps it all.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { capLoad, capResult, capSummary } from '../reporters/cap.js';
import { junitXml } from '../reporters/junit.js';
import { markdownSummary } from '../reporters/markdown.js';
import { LIST_CAP, MESSAGE_CAP, NAME_CAP, capList } from '../reporters/safe-text.js';
import { loadLine, runSummary } from '../reporters/summary.js';
import type { DeviceLoad, RunResult } from '../results/types.js';
import { type Look, NAMED_PROCESSES, busyReasons, usersOf } from '../suites/measure.js';
import { ROOT } from './support/command.js';
import { allElements, childElement, parseXml } from './support/xml.js';

/** 300 other processes on the GPU moving 30 GB/s over its link (names as NVML's double gives them). */
function crowdedLooks(): Look[] {
  const gpu = { source: 'nvml' as const, processes: Array.from({ length: 300 }, (_, i) => ({ pid: 3_000_000 + i, name: `many${i}`, usedMiB: 1, kind: 'compute' as const })), pcieRxMBps: 30_000, pcieTxMBps: 0 };
  return [{ gpu, pressure: { cpuSome: 90, memorySome: 30 } }];
}

/**
 * What measure.ts records of crowdedLooks, and a reason of 6,000 characters besides (as a results file of an
 * older version, or of another tool, may hold): what the reports cap.
 */
function crowded(): DeviceLoad {
  const looks = crowdedLooks();
  const why = [...busyReasons(looks, null, undefined), `a reason as long as a results file may make it: ${'y'.repeat(6000)}`];
  return { busy: true, why, attempts: 2, waitedForQuietMs: 2000, lockWaitMs: 3, timedMs: 100, quietWaitS: 60, processes: usersOf(looks), linkMBps: 30_000, monitor: 'nvml', monitorNote: `NVML: ${'n'.repeat(5000)}`, hostCopyGBps: 5, pressure: looks[0]!.pressure };
}

function result(): RunResult {
  const r = JSON.parse(readFileSync(join(ROOT, 'test', 'fixtures', 'cuda.json'), 'utf8')) as RunResult;
  r.devices[0]!.load = crowded();
  return r;
}

/** The longest a line built from the load may be: its reasons at MESSAGE_CAP each, LIST_CAP names, the figures. */
const LINE_BOUND = 3 * MESSAGE_CAP + LIST_CAP * (NAME_CAP + 20) + 600;

describe('the reasons measure.ts writes', () => {
  it('name NAMED_PROCESSES of the processes on the GPU and how many more (the results keep every process)', () => {
    const why = busyReasons(crowdedLooks(), null, undefined);
    const names = Array.from({ length: NAMED_PROCESSES }, (_, i) => `pid ${3_000_000 + i} many${i} (1 MiB)`).join(', ');
    expect(why[0]).toBe(`30.0 GB/s of PCIe traffic not ours; on the GPU: ${names} and ${300 - NAMED_PROCESSES} more`);
    const unread = crowdedLooks();
    unread[0]!.gpu = { ...unread[0]!.gpu!, pcieRxMBps: null, pcieTxMBps: null };
    expect(busyReasons(unread, null, undefined)[0]).toBe(`another process on the GPU (${names} and ${300 - NAMED_PROCESSES} more), and its link traffic cannot be read`);
    expect(usersOf(crowdedLooks())).toHaveLength(300);
  });
});

describe('capList', () => {
  it('names LIST_CAP items, then how many more', () => {
    const items = Array.from({ length: LIST_CAP + 5 }, (_, i) => `p${i}`);
    expect(capList(items)).toEqual([...items.slice(0, LIST_CAP), '…and 5 more']);
    expect(capList(items.slice(0, LIST_CAP))).toEqual(items.slice(0, LIST_CAP));
    expect(capList(['a', 'b', 'c'], 2)).toEqual(['a', 'b', '…and 1 more']);
  });
});

describe('the machine line and the reports, with 300 processes on the GPU', () => {
  it('the terminal: the machine line names LIST_CAP processes and how many more, its reasons capped', () => {
    const load = crowded();
    expect(load.why.join('; ').length).toBeGreaterThan(5000); // what there is to cap
    const line = loadLine(load, 5);
    expect(line.length).toBeLessThanOrEqual(LINE_BOUND);
    expect(line).toContain('; on the GPU: pid 3000000 many0, ');
    expect(line).toContain(`pid 3000009 many9, …and ${300 - LIST_CAP} more; link traffic not ours 30.0 GB/s`);
    expect(line).not.toContain('many10,');
    expect(line).toMatch(/more characters\)/); // the reason that names every process, cut
    for (const l of runSummary(result())) expect(l.length).toBeLessThanOrEqual(LINE_BOUND);
    // a monitor's note as long as a driver makes it, where no traffic was read
    const unread = { ...load, linkMBps: null, processes: [] };
    expect(loadLine(unread, 5).length).toBeLessThanOrEqual(LINE_BOUND);
  });

  it("JUnit: load.why at MESSAGE_CAP, load.processes LIST_CAP of them and how many more", () => {
    const r = result();
    for (const xml of [junitXml(capResult(r)), junitXml(r)]) {
      const suite = allElements(parseXml(xml), 'testsuite')[0]!;
      const props = Object.fromEntries((childElement(suite, 'properties')?.children ?? []).map((p) => [p.attrs.name!, p.attrs.value ?? p.text]));
      expect(props['load.why']!.length).toBeLessThanOrEqual(MESSAGE_CAP + 40);
      expect(props['load.why']).toMatch(/^30\.0 GB\/s of PCIe traffic not ours; on the GPU: pid 3000000 many0 \(1 MiB\)/);
      expect(props['load.processes']).toBe(`${Array.from({ length: LIST_CAP }, (_, i) => `${3_000_000 + i} many${i}`).join(', ')}, …and ${300 - LIST_CAP} more`);
      for (const [name, value] of Object.entries(props)) expect(value.length, name).toBeLessThanOrEqual(MESSAGE_CAP + 40);
    }
  });

  it('the step summary (from the capped result): no line over the bound', () => {
    const summary = capSummary(markdownSummary(capResult(result())));
    for (const l of summary.split('\n')) expect(l.length).toBeLessThanOrEqual(LINE_BOUND);
  });

  it('capLoad: each reason and the note at MESSAGE_CAP, each name at NAME_CAP; the figures and every process kept (the JSON keeps all)', () => {
    const load = crowded();
    load.processes[0]!.name = 'x'.repeat(NAME_CAP + 50);
    const capped = capLoad(load);
    expect(capped.processes).toHaveLength(300);
    expect(capped.processes[0]!.name).toBe(`${'x'.repeat(NAME_CAP)}…(50 more characters)`);
    expect(capped.why.map((w) => w.length <= MESSAGE_CAP + 30)).toEqual(load.why.map(() => true));
    expect(capped.monitorNote).toBe(`${`NVML: ${'n'.repeat(5000)}`.slice(0, MESSAGE_CAP)}…(${5006 - MESSAGE_CAP} more characters)`);
    expect({ ...capped, why: load.why, processes: load.processes, monitorNote: load.monitorNote }).toEqual(load);
    expect(capResult(result()).devices[0]!.load).toEqual(capLoad(crowded()));
  });
});
