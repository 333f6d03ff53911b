// Hostile inputs and outputs of run, list, compare, merge and report (the built command): an output that names an
// input (by any name of it: a symbolic link, a hard link) is refused before anything is written; an input that is
// not a regular file or a pipe (/dev/zero) is refused at once instead of filling the memory, a pipe with no writer soon after; a
// results file whose `merged` parts do not hold its devices is refused; `list` refuses the options of run alone;
// what the step summary and the terminal repeat of a baseline is capped; the JUnit of an interrupted run is red.
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, linkSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { junitXml } from '../reporters/junit.js';
import type { RunResult } from '../results/types.js';
import { MAIN, cleanEnv } from './support/command.js';
import { commandEnd } from './support/processes.js';

const work = mkdtempSync(join(tmpdir(), 'mapped-reg-io-guards-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

function cli(args: string[], env: Record<string, string | undefined> = {}) {
  const r = spawnSync(process.execPath, [MAIN, ...args], { env: cleanEnv(env, ['GITHUB_STEP_SUMMARY']), encoding: 'utf8', cwd: work, maxBuffer: 64 * 1024 * 1024 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}


const digest = (file: string): string => createHash('sha256').update(readFileSync(file)).digest('hex');
const fixture = (name: string): RunResult => JSON.parse(readFileSync(join(import.meta.dirname, 'fixtures', `${name}.json`), 'utf8')) as RunResult;
const write = (name: string, x: unknown): string => {
  const file = join(work, name);
  writeFileSync(file, typeof x === 'string' ? x : `${JSON.stringify(x, null, 2)}\n`);
  return file;
};
const oneLine = (r: { stderr: string }): string => {
  const lines = r.stderr.trimEnd().split('\n');
  expect(lines, r.stderr).toHaveLength(1);
  return lines[0]!;
};

let cpuRun: string;
beforeAll(() => {
  // a real run's results (the CPU device: no GPU, no driver double needed), for the baseline tests
  cpuRun = join(work, 'cpu-run.json');
  const r = cli(['--backend', 'cpu', '--json', cpuRun]);
  expect(r.code, r.stderr).toBe(0);
});

describe('an output that is one of the inputs is refused before anything is written (exit 2, one line)', () => {
  const cases: [string, (input: string) => string[]][] = [
    ['report --html', (input) => ['report', input, '--html', input]],
    ['merge -o', (input) => ['merge', input, write('other.json', { ...fixture('rocm724'), startedAt: '2026-02-01T00:00:00.000Z' }), '-o', input]],
    ['run --json over --baseline', (input) => ['--backend', 'cpu', '--baseline', input, '--json', input]],
    ['run --junit over --expectations', (input) => ['--backend', 'cpu', '--expectations', input, '--junit', input]],
    ['run --json over --skips-file', (input) => ['--backend', 'cpu', '--skips-file', input, '--json', input]],
  ];
  for (const [what, args] of cases) {
    for (const via of ['its name', 'a symbolic link', 'a hard link'] as const) {
      it(`${what}, the output named by ${via}`, () => {
        const dir = mkdtempSync(join(work, 'same-'));
        const input = join(dir, 'in.json');
        writeFileSync(input, readFileSync(what.includes('expectations') || what.includes('skips') ? write('empty.txt', '# nothing\n') : what.startsWith('run') ? cpuRun : join(import.meta.dirname, 'fixtures', 'cuda.json')));
        const before = digest(input);
        const argv = args(input);
        const out = via === 'its name' ? input : join(dir, 'alias.json');
        if (via === 'a symbolic link') symlinkSync(input, out);
        if (via === 'a hard link') linkSync(input, out);
        const at = argv.lastIndexOf(input);
        argv[at] = out;
        const r = cli(argv);
        expect(r.code, r.stderr).toBe(2);
        expect(oneLine(r)).toMatch(/the same file as .*which this command reads: an input is never overwritten/);
        expect(digest(input)).toBe(before);
      });
    }
  }

  it('GITHUB_STEP_SUMMARY naming the baseline is refused too', () => {
    const input = join(work, 'summary-is-baseline.json');
    writeFileSync(input, readFileSync(cpuRun));
    const before = digest(input);
    const r = cli(['--backend', 'cpu', '--baseline', input], { GITHUB_STEP_SUMMARY: input });
    expect(r.code, r.stderr).toBe(2);
    expect(oneLine(r)).toMatch(/^mapped-reg-conformance: GITHUB_STEP_SUMMARY .*the same file as --baseline/);
    expect(digest(input)).toBe(before);
  });

  it('the control: another file is written', () => {
    const out = join(work, 'page.html');
    const r = cli(['report', join(import.meta.dirname, 'fixtures', 'cuda.json'), '--html', out]);
    expect(r.code, r.stderr).toBe(0);
    expect(readFileSync(out, 'utf8')).toMatch(/^<!DOCTYPE html>/);
  });
});

describe('only regular files and pipes are read as inputs, a device refused at once (exit 2, one line)', () => {
  const good = join(import.meta.dirname, 'fixtures', 'cuda.json');
  for (const [what, args] of [
    ['--baseline /dev/zero', ['--backend', 'cpu', '--baseline', '/dev/zero']],
    ['--expectations /dev/zero', ['--backend', 'cpu', '--expectations', '/dev/zero']],
    ['--skips-file /dev/zero', ['--backend', 'cpu', '--skips-file', '/dev/zero']],
    ['compare /dev/zero', ['compare', '/dev/zero', good]],
    ['report /dev/zero', ['report', '/dev/zero', '--html', join(work, 'zero.html')]],
  ] as const) {
    it(what, () => {
      const r = cli([...args]);
      expect(r.code, r.stderr).toBe(2);
      expect(oneLine(r)).toMatch(/\/dev\/zero: not a regular file \(a character device\)/);
    });
  }

  it('a named pipe with no writer: refused after a bounded wait, not waited on for ever (test/inputs.test.ts: pipes with a writer are read)', async () => {
    const fifo = join(work, 'pipe.json');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    for (const args of [['compare', fifo, good], ['--backend', 'cpu', '--baseline', fifo]]) {
      const r = await commandEnd(work, args);
      expect(r.code, r.stderr).toBe(2);
      expect(oneLine(r)).toMatch(/pipe\.json: a named pipe that gave nothing in 3 s/);
    }
  });
});

describe('a results file is validated whole: its merged parts must hold its devices', () => {
  const base = (): RunResult & { merged?: unknown } => {
    const r = fixture('cuda') as RunResult & { merged?: unknown };
    r.devices = r.devices.map((d) => ({ ...d, host: { hostname: 'node-1', kernel: 'k', platform: 'p' } }));
    return r;
  };
  for (const [what, merged, reason] of [
    ['not a list', 'not a list', /\/merged must be array/],
    ['a null part', [null], /\/merged\/0 must be object/],
    ['a part with no host', [{ devices: 1 }], /\/merged\/0\/hostname is required/],
    ['parts counting other devices', [{ hostname: 'node-1', kernel: 'k', platform: 'p', startedAt: 's', finishedAt: 'f', tool: 't', devices: 3 }], /\/merged counts 3 device\(s\), \/devices holds 1/],
    ['a part of another host', [{ hostname: 'node-2', kernel: 'k', platform: 'p', startedAt: 's', finishedAt: 'f', tool: 't', devices: 1 }], /of \/merged\/0 \(host "node-2"\) carries host "node-1"/],
  ] as const) {
    it(`${what}: refused by compare`, () => {
      const file = write(`merged-${what.replace(/\W+/g, '-')}.json`, { ...base(), merged });
      const r = cli(['compare', file, join(import.meta.dirname, 'fixtures', 'cuda.json')]);
      expect(r.code, r.stderr).toBe(2);
      expect(oneLine(r)).toMatch(reason);
    });
  }

  it('the control: a merged file whose parts hold its devices is read', () => {
    const file = write('merged-good.json', { ...base(), merged: [{ hostname: 'node-1', kernel: 'k', platform: 'p', startedAt: 's', finishedAt: 'f', tool: 't', devices: 1 }] });
    const r = cli(['compare', file, file]);
    expect(r.code, r.stderr).toBe(0);
  });
});

describe('list refuses the options of run alone', () => {
  for (const args of [['--baseline', '/nonexistent.json'], ['--expectations', 'x.txt'], ['--require', 'cuda'], ['--max-drop', '5%'], ['--timeout', '3'], ['--runs', '2'], ['--size', '8'], ['--min-relative-speed', '0.5']]) {
    it(`list ${args.join(' ')}: exit 2, one line`, () => {
      const r = cli(['list', '--backend', 'cpu', ...args]);
      expect(r.code, r.stderr).toBe(2);
      expect(oneLine(r)).toBe(`mapped-reg-conformance: list: ${args[0]} is an option of run alone (list registers, copies and judges nothing; see mapped-reg-conformance list --help)`);
    });
  }

  it('the control: list with its own options runs', () => {
    const r = cli(['list', '--backend', 'cpu', '--json', join(work, 'list.json')]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(readFileSync(join(work, 'list.json'), 'utf8')).devices).toHaveLength(1);
  });
});

describe('what the reports repeat of a baseline is capped', () => {
  it('a missing device of a 100 kB name: the step summary and the terminal stay small, the JSON keeps it whole', () => {
    const baseline = JSON.parse(readFileSync(cpuRun, 'utf8')) as RunResult;
    const huge = `GPU ${'\u001b]0;owned\u0007'}${'N'.repeat(100_000)}`;
    baseline.devices.push({ ...baseline.devices[0]!, id: 'cuda:0', backend: 'cuda', name: huge, pciBusId: `0000:${'f'.repeat(50_000)}` });
    const file = write('huge-baseline.json', baseline);
    const summary = join(work, 'summary.md');
    const json = join(work, 'huge-run.json');
    // the run asks for CUDA (and finds none here): the baseline's CUDA device is missing
    const r = cli(['--backend', 'cpu', '--backend', 'cuda', '--baseline', file, '--json', json], { GITHUB_STEP_SUMMARY: summary });
    expect(r.code, r.stderr).toBe(1);
    const text = readFileSync(summary, 'utf8');
    expect(text).toMatch(/Regressions and other reasons the gate failed \(1\)\n\n- cuda:0 GPU/);
    expect(text).toMatch(/…\(\d+ more characters\)/);
    expect(Buffer.byteLength(text)).toBeLessThan(20_000);
    expect(Buffer.byteLength(r.stdout)).toBeLessThan(20_000);
    expect(r.stdout).not.toContain('\u001b');
    expect(readFileSync(json, 'utf8')).toContain('N'.repeat(100_000));
  });

  it('a device of a 100 kB name that the run did not ask for (--backend cpu): listed as not compared, capped as well', () => {
    const baseline = JSON.parse(readFileSync(cpuRun, 'utf8')) as RunResult;
    const huge = `GPU ${'\u001b]0;owned\u0007'}${'N'.repeat(100_000)}`;
    baseline.devices.push({ ...baseline.devices[0]!, id: 'cuda:0', backend: 'cuda', name: huge, pciBusId: `0000:${'f'.repeat(50_000)}` });
    const file = write('huge-baseline-not-asked.json', baseline);
    const summary = join(work, 'summary-not-asked.md');
    const json = join(work, 'huge-run-not-asked.json');
    const r = cli(['--backend', 'cpu', '--baseline', file, '--json', json], { GITHUB_STEP_SUMMARY: summary });
    expect(r.code, r.stderr).toBe(0);
    const text = readFileSync(summary, 'utf8');
    expect(text).toMatch(/not compared \(not asked for: the run gave --backend cpu\): cuda:0 GPU/);
    expect(Buffer.byteLength(text)).toBeLessThan(20_000);
    expect(r.stdout).toMatch(/not compared \(not asked for: the run gave --backend cpu\): cuda:0 GPU/);
    expect(Buffer.byteLength(r.stdout)).toBeLessThan(20_000);
    expect(r.stdout).not.toContain('\u001b');
    expect(readFileSync(json, 'utf8')).toContain('N'.repeat(100_000));
  });
});

describe('the JUnit of an interrupted run is red', () => {
  const incomplete = (): RunResult => {
    const r = fixture('cuda');
    return { ...r, incomplete: true, devices: r.devices.map((d) => ({ ...d, incomplete: true })), gate: undefined } as RunResult;
  };

  it('an <error> in the gate testsuite names the signal, and the counts show it', () => {
    const xml = junitXml(incomplete(), { stoppedBy: 'SIGTERM' });
    const suites = /<testsuites\b[^>]*>/.exec(xml)![0];
    expect(Number(/errors="(\d+)"/.exec(suites)![1])).toBeGreaterThanOrEqual(1);
    const gate = /<testsuite name="gate \[INCOMPLETE\] on [^"]*"[^>]*>[\s\S]*?<\/testsuite>/.exec(xml);
    expect(gate, xml.slice(-2000)).not.toBeNull();
    expect(gate![0]).toMatch(/errors="1"/);
    expect(gate![0]).toMatch(/<error message="the run was interrupted by SIGTERM before every check reported: 1 device incomplete \(cuda:0\)[^"]*" type="interrupted"/);
    expect(gate![0]).toMatch(/<property name="stoppedBy" value="SIGTERM"\/>/);
  });

  it('the control: a complete run has no such error', () => {
    const xml = junitXml(fixture('cuda'));
    expect(xml).not.toMatch(/interrupted/);
  });

  it('end to end: SIGINT during a run writes that JUnit', async () => {
    const junit = join(work, 'interrupted.xml');
    const child = spawn(process.execPath, [MAIN, '--backend', 'cpu', '--junit', junit, '--json', join(work, 'interrupted.json')], {
      env: cleanEnv({ MAPPED_REG_FORCE_HANG: 'static.verdict' }, ['GITHUB_STEP_SUMMARY']),
      cwd: work,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const started = new Promise<void>((done) => {
      child.stdout.on('data', (b: Buffer) => {
        out += b.toString();
        if (/^checks \(/m.test(out)) done();
      });
    });
    const ended = new Promise<number | null>((done) => child.on('close', (code) => done(code)));
    await started;
    child.kill('SIGINT');
    expect(await ended).toBe(130);
    expect(existsSync(junit)).toBe(true);
    const xml = readFileSync(junit, 'utf8');
    expect(xml).toMatch(/type="interrupted"/);
    expect(xml).toMatch(/interrupted by SIGINT/);
    expect(statSync(junit).size).toBeGreaterThan(0);
  });
});
