// Inputs as shells give them (results/read.ts readInput): `-` (standard input) and a pipe with a writer (process
// substitution, `--baseline <(curl -s "$URL")`) are read like files, up to the same caps; a named pipe with no
// writer is refused within PIPE_WAIT_MS with one line, never waited on for ever, and the event loop stays free
// while it is polled.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { InputError, MAX_INPUT_BYTES, readInput, TEXT_INPUT_BYTES } from '../results/read.js';
import { MAIN, NO_HAZARDS, cleanEnv } from './support/command.js';
import { commandEnd } from './support/processes.js';

const work = mkdtempSync(join(tmpdir(), 'mapped-reg-inputs-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const good = join(import.meta.dirname, 'fixtures', 'cuda.json');
const other = join(import.meta.dirname, 'fixtures', 'rocm724.json');
const quote = (s: string): string => `'${s.replaceAll("'", `'\\''`)}'`;
const oneLine = (r: { stderr: string }): string => {
  const lines = r.stderr.trimEnd().split('\n');
  expect(lines, r.stderr).toHaveLength(1);
  return lines[0]!;
};

/** A bash command line (process substitution is bash's), the command as `$M`; `input` on its standard input. */
function sh(script: string, input?: string) {
  const r = spawnSync('bash', ['-c', script], { env: cleanEnv({ M: `${quote(process.execPath)} ${quote(MAIN)}` }), encoding: 'utf8', cwd: work, input, maxBuffer: 256 * 1024 * 1024 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}
const M = 'eval "$M"';


describe('process substitution: a pipe with a writer is read as a file', () => {
  it('compare <(cat OLD) NEW, and compare OLD <(cat NEW)', () => {
    const r = sh(`${M} compare <(cat ${quote(good)}) ${quote(good)} && ${M} compare ${quote(good)} <(cat ${quote(good)})`);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/0 regressions, 0 fixes, 0 new, 0 missing, \d+ unchanged: no regression/);
  });

  it('run --baseline <(...) --expectations <(...) --skips-file <(...): the gate reads each', () => {
    const base = join(work, 'base.json');
    expect(sh(`${M} --backend cpu --json ${quote(base)} ${NO_HAZARDS.join(' ')}`).code).toBe(0);
    const json = join(work, 'against.json');
    const r = sh(
      `${M} --backend cpu --json ${quote(json)} --baseline <(cat ${quote(base)}) --expectations <(echo 'flake timing.margin') --skips-file <(echo 'hazard.*')`,
    );
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const gate = (JSON.parse(readFileSync(json, 'utf8')) as { gate: { pass: boolean; baseline: string; expectations: string } }).gate;
    expect(gate.pass).toBe(true);
    expect(gate.baseline).toMatch(/^\/dev\/fd\/\d+$/);
    expect(gate.expectations).toMatch(/^\/dev\/fd\/\d+$/);
  });

  it('history add --db FILE <(...): the run is added', () => {
    const db = join(work, 'subst.db');
    const r = sh(`${M} history add --db ${quote(db)} <(cat ${quote(good)})`);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^added 1 run \(1 device, \d+ checks\) from 1 file/);
  });

  it('a named pipe whose writer holds it open and writes later is waited for, then read', () => {
    const fifo = join(work, 'late.json');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    // the writer opens the pipe (blocked until the command opens it), then writes only after a while
    const r = sh(`( exec 3>${quote(fifo)}; sleep 0.5; cat ${quote(good)} >&3 ) & ${M} compare ${quote(fifo)} ${quote(good)}; s=$?; wait; exit $s`);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
  });

  it('a pipe holding more than the cap is refused with one line, exit 2', () => {
    const r = sh(`${M} --backend cpu --skips-file <(head -c ${TEXT_INPUT_BYTES + 1} /dev/zero)`);
    expect(r.code).toBe(2);
    expect(oneLine(r)).toMatch(new RegExp(`^mapped-reg-conformance: --skips-file /dev/fd/\\d+: more than the ${TEXT_INPUT_BYTES} bytes an input file may hold$`));
  });
});

describe('- is standard input', () => {
  it('compare - NEW and compare OLD -', () => {
    const text = readFileSync(good, 'utf8');
    for (const args of [`- ${quote(good)}`, `${quote(good)} -`]) {
      const r = sh(`${M} compare ${args}`, text);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/no regression/);
    }
  });

  it('merge - FILE, report -, history add -, --expectations -', () => {
    const r1 = sh(`${M} merge - ${quote(other)} -o ${quote(join(work, 'merged.json'))}`, readFileSync(good, 'utf8'));
    expect(r1.stderr).toBe('');
    expect(r1.stdout).toMatch(/^merged 2 files, 2 devices/);
    const r2 = sh(`${M} report - --html ${quote(join(work, 'page.html'))}`, readFileSync(good, 'utf8'));
    expect(r2.code, r2.stderr).toBe(0);
    const r3 = sh(`${M} history add --db ${quote(join(work, 'stdin.db'))} -`, readFileSync(good, 'utf8'));
    expect(r3.code, r3.stderr).toBe(0);
    expect(r3.stdout).toMatch(/^added 1 run/);
    // a listed failure that passes: the expectations were read
    const r4 = sh(`${M} compare ${quote(good)} ${quote(good)} --expectations - --json`, 'fail  hazard.tmpfs_bytes\n');
    expect(r4.stderr).toBe('');
    expect(r4.stdout).toMatch(/"unexpected-pass"/);
  });

  it('- given twice: the second is refused with one line, exit 2 (it would find standard input at its end)', () => {
    const r = sh(`${M} compare - -`, readFileSync(good, 'utf8'));
    expect(r.code).toBe(2);
    expect(oneLine(r)).toBe('mapped-reg-conformance: standard input (-): read once already by this command: only one input can be -');
  });

  it('a terminal as standard input is refused with one line (nothing was piped in), not waited on', () => {
    // util-linux `script`: the command on a pseudo-terminal, its standard input that terminal
    const command = [process.execPath, MAIN, 'compare', '-', good].map(quote).join(' ');
    const r = spawnSync('script', ['-qec', command, '/dev/null'], { env: cleanEnv(), encoding: 'utf8', cwd: work, input: '', timeout: 60_000 });
    expect(r.status).toBe(2);
    expect(r.stdout).toMatch(/mapped-reg-conformance: standard input \(-\): a terminal, not a file: pipe the file in/);
  });

  it('what standard input holds is judged as a file: empty is not JSON, named as standard input', () => {
    const r = sh(`${M} compare - ${quote(good)} < /dev/null`);
    expect(r.code).toBe(2);
    expect(oneLine(r)).toMatch(/^mapped-reg-conformance: standard input \(-\): not valid JSON/);
  });
});

describe('a named pipe with no writer: refused within a bounded time, one line, exit 2', () => {
  it('compare and --baseline', async () => {
    const fifo = join(work, 'nobody.json');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    for (const args of [['compare', fifo, good], ['--backend', 'cpu', '--baseline', fifo]]) {
      const r = await commandEnd(work, args);
      expect(r.code, r.stderr).toBe(2);
      expect(oneLine(r)).toBe(`mapped-reg-conformance: ${fifo}: a named pipe that gave nothing in 3 s (no process writes to it): start its writer first, or give a file`);
    }
  });

  it('the event loop runs while the pipe is polled (a timer fires), and the refusal is an InputError', async () => {
    const fifo = join(work, 'poll.json');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    let ticks = 0;
    const timer = setInterval(() => ticks++, 10);
    try {
      await expect(readInput(fifo, MAX_INPUT_BYTES, 300)).rejects.toThrow(InputError);
    } finally {
      clearInterval(timer);
    }
    expect(ticks).toBeGreaterThan(0);
  });

  it('a device is still refused at once', async () => {
    await expect(readInput('/dev/zero')).rejects.toThrow('/dev/zero: not a regular file (a character device): an input must be a file or a pipe');
  });

  it('a regular file is read as before', async () => {
    const f = join(work, 'plain.txt');
    writeFileSync(f, 'héllo\n');
    expect(await readInput(f)).toBe('héllo\n');
  });
});
