import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { colourWanted, terminalWidth } from '../cli/stdout.js';
import { junitXml } from '../reporters/junit.js';
import { ansi } from '../reporters/look.js';
import { gateSummary, runSummary } from '../reporters/summary.js';
import { discoveryLines, Progress, STILL_RUNNING_S } from '../reporters/terminal.js';
import { checkDetail, checkReason } from '../results/check-text.js';
import { decide } from '../results/gate.js';
import type { RunResult } from '../results/types.js';
import { Kernel_hazard, Refused, Usable, verdictJson, verdictName, verdictWords, Wrong_bytes } from '../src/verdict.js';
import { cleanEnv, MAIN, ROOT } from './support/command.js';

const events = (p: Progress): void => {
  p.event('cuda:0', { type: 'start', id: 'static.verdict' });
  p.event('cuda:0', { type: 'result', id: 'static.verdict', status: 'pass', observed: 'Self_test_required' });
  p.event('cpu', { type: 'result', id: 'probe.verdict', status: 'skip', message: 'decided statically' });
  p.event('cuda:0', { type: 'start', id: 'probe.release' });
  p.event('cuda:0', { type: 'result', id: 'probe.release', status: 'crash', message: 'the check killed its process: SIGSEGV' });
  p.event('cuda:0', { type: 'end' });
  p.finish();
};

describe('progress', () => {
  it('not on a terminal: one plain line per check result, no escape sequences', () => {
    let text = '';
    events(new Progress((t) => (text += t), false, ['cuda:0', 'cpu']));
    const lines = text.trimEnd().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^ {2}\[\d+\.\d s\] cuda:0 static\.verdict pass - Self_test_required$/);
    expect(lines[1]).toMatch(/cuda:0 probe\.release crash - the check killed its process: SIGSEGV/);
    // a skip is told when its device is done (here at finish: cpu never ended), with its reason
    expect(lines[2]).toMatch(/cpu probe\.verdict skip - decided statically$/);
    expect(text).not.toMatch(/\x1b/);
  });

  it('on a terminal: a status line per device redrawn in place; only what did not pass stays printed', () => {
    let text = '';
    events(new Progress((t) => (text += t), true, ['cuda:0', 'cpu']));
    expect(text).toMatch(/\x1b\[3A\x1b\[0J/); // two devices and the elapsed line, redrawn
    const last = text.slice(text.lastIndexOf('\x1b[0J') + 4);
    expect(last).toMatch(/cuda:0\s+2 checks\s+1 pass\s+0 warn\s+1 fail\s+0 skip\s+done/);
    expect(last).toMatch(/cpu\s+1 check\s+0 pass\s+0 warn\s+0 fail\s+1 skip\s+done/);
    // the crash was printed for good; the pass was not
    expect(text).toMatch(/cuda:0 probe\.release crash/);
    expect(text).not.toMatch(/static\.verdict pass - /);
  });

  it('not on a terminal: a device\'s skipped checks are one line per reason when the device is done', () => {
    let text = '';
    const p = new Progress((t) => (text += t), false, ['cpu']);
    p.event('cpu', { type: 'result', id: 'static.verdict', status: 'pass', observed: 'Not_needed' });
    for (const id of ['hazard.a', 'hazard.b', 'hazard.c']) p.event('cpu', { type: 'result', id, status: 'skip', message: 'no registration on cpu' });
    p.event('cpu', { type: 'result', id: 'probe.verdict', status: 'skip', message: 'decided statically' });
    expect(text.trimEnd().split('\n')).toHaveLength(1); // nothing told before the end
    p.event('cpu', { type: 'end' });
    p.finish();
    const lines = text.trimEnd().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[1]).toMatch(/cpu 3 checks skip - no registration on cpu$/);
    expect(lines[2]).toMatch(/cpu probe\.verdict skip - decided statically$/);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// The terminal at a glance (issue 31): its width, its colours, one level of parentheses, plurals, the plain words
// beside the codes, "no baseline", what the progress says between checks.

const fixture = (name: string): RunResult => JSON.parse(readFileSync(join(ROOT, 'test', 'fixtures', name), 'utf8')) as RunResult;
/** Text without its colours. */
const uncoloured = (s: string): string => s.replace(/\x1b\[\d+m/g, '');
/** How deep parentheses nest in `s`. */
function depth(s: string): number {
  let d = 0;
  let max = 0;
  for (const c of s) {
    if (c === '(') max = Math.max(max, ++d);
    else if (c === ')') d -= 1;
  }
  return max;
}

/** The H200 run with a Vulkan device refused beside its OpenCL one. */
function withVulkan(): RunResult {
  const r = fixture('h200.json');
  const vulkan = structuredClone(r.devices.find((d) => d.id === 'opencl:1')!);
  vulkan.id = 'vulkan:0';
  vulkan.backend = 'vulkan';
  vulkan.verdict = verdictJson(Refused(Kernel_hazard('registering host memory through Vulkan crashed the Linux kernel on AMD GPUs (kernel oopses, Sarek issues #503/#504), so it is never tried')));
  r.devices.push(vulkan);
  return r;
}

/** A run of one CUDA device whose overlap check failed: its plain words in the message, its codes observed. */
function overlapFailed(): RunResult {
  const r = fixture('cuda.json');
  delete r.gate;
  const c = r.devices[0]!.checks.find((x) => x.id === 'hazard.overlap_refused')!;
  Object.assign(c, { status: 'fail', message: 'the driver accepted an overlapping range (a false success)', observed: 'overlapping pages 1-2: register 0; unregister 0, 0' });
  return r;
}

describe('the summary fits the terminal', () => {
  it('within 80 columns every table line fits; device, verdict and checks stay; page-locked GB/s goes first, and the run says what it left out', () => {
    const lines = runSummary(withVulkan(), false, { width: 80 });
    const header = lines[0]!;
    for (const l of lines) expect(l.length, l).toBeLessThanOrEqual(80);
    for (const kept of ['device', 'verdict', 'checks']) expect(header).toContain(kept);
    expect(header).not.toContain('page-locked GB/s');
    expect(lines).toContainEqual(expect.stringMatching(/^left out to fit 80 columns: page-locked GB\/s, reg\/page-locked, /));
    expect(lines.find((l) => l.startsWith('cuda:0 '))).toMatch(/Usable\s+.*20 pass/);
  });

  it('the check counts are told short (no zero counts) only where the whole ones do not fit', () => {
    const at = (width: number): string => runSummary(fixture('h200.json'), false, { width }).find((l) => l.startsWith('cuda:0 '))!;
    expect(at(100)).toMatch(/ 20 pass, 0 warn, 0 fail, 0 skip$/);
    expect(at(60)).toMatch(/ 20 pass$/);
    expect(runSummary(fixture('h200.json'), false, { width: 60 }).find((l) => l.startsWith('opencl:1 '))).toMatch(/ 1 pass, 19 skip$/);
  });

  it('a wide terminal keeps every column; no width (a pipe) gives the whole table, each line whole', () => {
    for (const look of [{}, { width: 400 }]) {
      const lines = runSummary(withVulkan(), false, look);
      expect(lines[0]!.split(/ {2,}/)).toEqual(['device', 'name', 'driver', 'verdict', 'registered GB/s', 'staged GB/s', 'ratio', 'page-locked GB/s', 'reg/page-locked', 'checks']);
      expect(lines.some((l) => l.startsWith('left out'))).toBe(false);
    }
    expect(runSummary(withVulkan()).some((l) => l.length > 120)).toBe(true);
  });

  it('the lines under the table and the gate\'s wrap at words within the width, indented', () => {
    const lines = runSummary(withVulkan(), false, { width: 60 });
    for (const l of lines.slice(lines.findIndex((x) => x.startsWith('cuda:0:')))) expect(l.length, l).toBeLessThanOrEqual(60);
    expect(lines.join('\n')).toMatch(/\n {2}\S/);
  });
});

describe('colour', () => {
  it('PASS green, FAIL red, what the host failed magenta; a Usable verdict green, a failure count red', async () => {
    const pass = await decide(fixture('cuda.json'));
    expect(gateSummary(pass, { paint: ansi }).at(-1)).toMatch(/^\x1b\[32mPASS\x1b\[39m: /);
    const fail = await decide(overlapFailed());
    const lines = gateSummary(fail, { paint: ansi });
    expect(lines.at(-1)).toMatch(/^\x1b\[31mFAIL\x1b\[39m: /);
    expect(lines[1]).toMatch(/^ {2}\x1b\[31mFAIL\x1b\[39m {2}cuda:0 /);
    const host = structuredClone(fixture('cuda.json'));
    delete host.gate;
    Object.assign(host.devices[0]!.checks.find((x) => x.id === 'hazard.overlap_refused')!, { status: 'error', message: 'the host: no space left' });
    const hostGate = gateSummary(await decide(host), { paint: ansi });
    expect(hostGate[1]).toMatch(/\x1b\[35mHOST ERROR\x1b\[39m/);
    expect(hostGate.at(-1)).toMatch(/^\x1b\[35mFAIL\x1b\[39m/);
    const table = runSummary(overlapFailed(), false, { paint: ansi });
    expect(table[1]).toMatch(/\x1b\[32mUsable\x1b\[39m {2,}/);
    expect(table[1]).toMatch(/\x1b\[31m1 fail\x1b\[39m/);
  });

  it('none unless asked: the same lines, without a single escape', async () => {
    const fail = await decide(overlapFailed());
    expect([...runSummary(overlapFailed()), ...gateSummary(fail)].join('\n')).not.toMatch(/\x1b/);
    expect(gateSummary(fail, { paint: ansi }).map(uncoloured)).toEqual(gateSummary(fail));
  });

  it('the command decides: NO_COLOR (not empty) never, FORCE_COLOR (not 0 or false) always, else a terminal that is not dumb', () => {
    expect(colourWanted({}, true)).toBe(true);
    expect(colourWanted({}, false)).toBe(false);
    expect(colourWanted({ TERM: 'dumb' }, true)).toBe(false);
    expect(colourWanted({ NO_COLOR: '1' }, true)).toBe(false);
    expect(colourWanted({ NO_COLOR: '' }, true)).toBe(true);
    expect(colourWanted({ FORCE_COLOR: '1' }, false)).toBe(true);
    expect(colourWanted({ FORCE_COLOR: '0' }, true)).toBe(false);
    expect(colourWanted({ FORCE_COLOR: 'false' }, true)).toBe(false);
    expect(colourWanted({ FORCE_COLOR: '1', NO_COLOR: '1' }, true)).toBe(false);
  });

  it('the width: COLUMNS on a terminal, none in a pipe (the whole table)', () => {
    expect(terminalWidth({ COLUMNS: '80' }, true)).toBe(80);
    expect(terminalWidth({ COLUMNS: '80' }, false)).toBeUndefined();
    expect(terminalWidth({ COLUMNS: 'wide' }, false)).toBeUndefined();
  });
});

describe('verdicts: one level of parentheses, a refusal said once', () => {
  it('under the table, one line a device with a reason, none nesting parentheses; the refusal once, with where to read more', () => {
    const lines = runSummary(withVulkan());
    for (const l of lines) expect(depth(l), l).toBeLessThanOrEqual(1);
    expect(lines.filter((l) => l.startsWith('vulkan:0: '))).toEqual([expect.stringMatching(/^vulkan:0: refused: registering host memory through Vulkan crashed .* \(read more: docs\/verdicts\.md/)]);
    expect(lines.filter((l) => l.startsWith('opencl:1: '))).toHaveLength(1);
    expect(lines).toContain('opencl:0: Not_needed: a CPU device reads host memory directly');
  });

  it('a refusal without a reason of its own is told in plain words', () => {
    const r = fixture('cuda.json');
    r.devices[0]!.verdict = verdictJson(Refused(Wrong_bytes));
    expect(runSummary(r).filter((l) => l.startsWith('cuda:0: '))).toEqual([expect.stringMatching(/^cuda:0: refused: the driver said the registration worked, .* \(read more: /)]);
  });

  it('the model\'s words for a line: one level', () => {
    const v = Refused(Kernel_hazard('why (more)'));
    expect(verdictWords(v)).toBe('Refused (Kernel_hazard): why (more)');
    expect(verdictName(v)).toBe('Refused (Kernel_hazard)');
    expect(verdictWords(Usable)).toBe('Usable');
  });
});

describe('plurals', () => {
  it('1 check, 2 checks; 1 device', () => {
    let text = '';
    const p = new Progress((t) => (text += t), true, ['cpu']);
    p.event('cpu', { type: 'result', id: 'static.verdict', status: 'pass' });
    expect(text.slice(text.lastIndexOf('\x1b[0J'))).toMatch(/cpu\s+1 check {2}/);
    p.event('cpu', { type: 'result', id: 'probe.verdict', status: 'pass' });
    p.finish();
    expect(text.slice(text.lastIndexOf('\x1b[0J'))).toMatch(/cpu\s+2 checks {2}/);
    const found = { backends: [{ backend: 'cuda' as const, library: 'libcuda.so.1', devices: 1 }], gpuDriverFound: true, devices: [] };
    expect(discoveryLines({ ms: 1, inProcesses: [], found, selected: [], interrupted: false })[1]).toBe('  cuda: libcuda.so.1, 1 device');
  });
});

describe('a failed check: its plain words beside its codes, in the progress and the gate, as JUnit says them', () => {
  it('the progress line', () => {
    let text = '';
    const p = new Progress((t) => (text += t), false, ['cuda:0']);
    p.event('cuda:0', { type: 'result', id: 'hazard.overlap_refused', status: 'fail', message: 'the driver accepted an overlapping range (a false success)', observed: 'register 0; unregister 0, 0' });
    p.finish();
    expect(text).toMatch(/cuda:0 hazard\.overlap_refused fail - the driver accepted an overlapping range \(a false success\); observed: register 0; unregister 0, 0\n$/);
  });

  it('the gate\'s reason and last line, with no baseline: said as such, no "(none) -> fail: new failure"', async () => {
    const lines = gateSummary(await decide(overlapFailed()));
    expect(lines[0]).toBe('gate: no baseline');
    expect(lines.at(-1)).toMatch(/^FAIL: cuda:0 .*: hazard\.overlap_refused fail: the driver accepted an overlapping range \(a false success\); observed: overlapping pages 1-2: register 0; unregister 0, 0$/);
    expect(lines.join('\n')).not.toMatch(/\(none\)|new failure/);
  });

  it('against a baseline a new failure is still told as one', async () => {
    const baseline = fixture('cuda.json');
    const gate = await decide(overlapFailed(), { baseline: { file: 'base.json', result: baseline } });
    expect(gateSummary(gate).join('\n')).toMatch(/REGRESSION {2}cuda:0 .*hazard\.overlap_refused pass -> fail: the driver accepted an overlapping range/);
  });

  it('one text for both: JUnit\'s failure message is the check\'s reason', () => {
    const r = overlapFailed();
    const c = r.devices[0]!.checks.find((x) => x.id === 'hazard.overlap_refused')!;
    expect(checkReason(c)).toBe('the driver accepted an overlapping range (a false success)');
    expect(junitXml(r)).toContain(`<failure message="${checkReason(c)}" type="fail">`);
    expect(checkDetail({ status: 'fail', observed: 'x' })).toBe('x');
    expect(checkDetail({ status: 'fail', message: 'm x' , observed: 'x' })).toBe('m x');
    expect(checkReason({ status: 'fail', expected: 'a', observed: 'b' })).toBe('expected a; observed b');
  });
});

describe('the progress between two checks', () => {
  it('says what came last, and before any check that it waits for its first', () => {
    let text = '';
    const p = new Progress((t) => (text += t), true, ['cuda:0']);
    expect(text).toMatch(/cuda:0 .* waiting for its first check\n/);
    p.event('cuda:0', { type: 'start', id: 'static.verdict' });
    p.event('cuda:0', { type: 'result', id: 'static.verdict', status: 'pass' });
    const last = text.slice(text.lastIndexOf('\x1b[0J'));
    expect(last).toMatch(/cuda:0 .* after static\.verdict\n/);
    expect(text).not.toMatch(/starting/);
    p.finish();
  });

  it('on a narrow terminal a status line never wraps (the redraw would leave it behind)', () => {
    let text = '';
    const p = new Progress((t) => (text += t), true, ['cuda:0'], STILL_RUNNING_S, { width: 40 });
    p.event('cuda:0', { type: 'start', id: 'hazard.release_after_double_registration' });
    p.finish();
    for (const l of text.replace(/\x1b\[\d+A\x1b\[0J/g, '').split('\n')) expect(l.length, l).toBeLessThan(40);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// The command itself: on a pseudo-terminal (util-linux `script`, whose terminal says no width: COLUMNS gives it),
// and in a pipe.

describe('the command on a terminal and in a pipe', () => {
  const work = mkdtempSync(join(tmpdir(), 'mapped-reg-terminal-'));
  afterAll(() => rmSync(work, { recursive: true, force: true }));
  const args = (): string[] => ['--backend', 'cpu', '--scratch-dir', mkdtempSync(join(work, 'scratch-'))];
  const quote = (s: string): string => `'${s.replaceAll("'", `'\\''`)}'`;
  /** The summary's lines (from its table's header on), colours and carriage returns taken out. */
  const summary = (output: string): string[] => {
    const lines = output.replace(/\r/g, '').split('\n');
    return lines.slice(lines.findIndex((l) => uncoloured(l).startsWith('device '))).filter((l) => l !== '');
  };

  it('on a terminal of 80 columns (COLUMNS): every line fits, PASS in green, and the last line is PASS', () => {
    const command = [process.execPath, MAIN, ...args()].map(quote).join(' ');
    const r = spawnSync('script', ['-qec', command, '/dev/null'], { env: cleanEnv({ COLUMNS: '80', TERM: 'xterm', NO_COLOR: undefined, FORCE_COLOR: undefined }), encoding: 'utf8', cwd: work });
    expect(r.status).toBe(0);
    const lines = summary(r.stdout);
    expect(lines.length).toBeGreaterThan(3);
    // every line, the discovery's and the redrawn status lines' too (their cursor movements taken out)
    for (const l of r.stdout.replace(/\r/g, '').replace(/\x1b\[\d*[A-Za-z]/g, '').split('\n')) expect(l.length, l).toBeLessThanOrEqual(80);
    expect(lines.at(-1)).toMatch(/^\x1b\[32mPASS\x1b\[39m: 1 device/);
  });

  it('in a pipe: the whole table, no colour, whatever COLUMNS says; FORCE_COLOR colours it all the same; NO_COLOR wins', () => {
    const pipe = spawnSync(process.execPath, [MAIN, ...args()], { env: cleanEnv({ COLUMNS: '80', FORCE_COLOR: undefined, NO_COLOR: undefined }), encoding: 'utf8', cwd: work });
    expect(pipe.status).toBe(0);
    expect(pipe.stdout).not.toMatch(/\x1b/);
    expect(summary(pipe.stdout)[0]!.split(/ {2,}/)).toHaveLength(10);
    expect(pipe.stdout.trimEnd().split('\n').at(-1)).toMatch(/^PASS: 1 device /);
    const forced = spawnSync(process.execPath, [MAIN, ...args()], { env: cleanEnv({ FORCE_COLOR: '1', NO_COLOR: undefined }), encoding: 'utf8', cwd: work });
    expect(forced.stdout).toMatch(/\x1b\[32mPASS\x1b\[39m: /);
    expect(forced.stdout).toMatch(/cpu static\.verdict \x1b\[32mpass\x1b\[39m/);
    const both = spawnSync(process.execPath, [MAIN, ...args()], { env: cleanEnv({ FORCE_COLOR: '1', NO_COLOR: '1' }), encoding: 'utf8', cwd: work });
    expect(both.stdout).not.toMatch(/\x1b/);
  });
});

describe('a line printed for good on a terminal', () => {
  it('wraps at words within the width, indented', () => {
    let text = '';
    const p = new Progress((t) => (text += t), true, ['cuda:0'], STILL_RUNNING_S, { width: 50 });
    p.event('cuda:0', { type: 'result', id: 'hazard.overlap_refused', status: 'fail', message: 'the driver accepted an overlapping range (a false success)', observed: 'register 0; unregister 0, 0' });
    p.finish();
    const told = text.replace(/\x1b\[\d+A\x1b\[0J/g, '').split('\n').filter((l) => !/cuda:0 {2,}|^ {2}\d/.test(l));
    for (const l of told) expect(l.length, l).toBeLessThanOrEqual(50);
    expect(told.filter((l) => l.startsWith('    '))).not.toEqual([]);
  });
});
