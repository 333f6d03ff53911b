// scripts/h200/busy.sh, the gate's busy-machine scenarios for the real H200, run here against the CUDA driver
// double (the command and the shim through MAPPED_REG_SHIM_REAL, the link hog through MAPPED_REG_HOG_CUDA_LIBRARY),
// its hogs made small. This is a smoke test of the script's plumbing only: it builds the shim and the hogs, runs
// every scenario with its hogs started (each really running before the command) and stopped, writes busy.txt with a
// row per scenario and busy.tgz with every run's output, and leaves no hog and no temporary folder behind, even when
// it is stopped by a signal. Whether each scenario's expectations hold (its exit status, whom the gate blames) is
// the H200's to say: the double has no busy machine to see, and the runs against the baseline need the gate's
// --quiet-wait, so this test asserts no scenario's verdict but the quiet baseline's.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildDoubles } from './double/build.js';
import { ROOT, cleanEnv } from './support/command.js';
import { commandLine, running, waitUntil } from './support/processes.js';

const work = mkdtempSync(join(tmpdir(), 'mapped-reg-busy-script-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
const doubles = buildDoubles();
const SCRIPT = join(ROOT, 'scripts', 'h200', 'busy.sh');
const SCENARIOS = ['baseline', 'quiet-1', 'quiet-2', 'quiet-3', 'host-hog', 'link-hog', 'both-hogs', 'shim-slow-registered', 'shim-slow-all', 'lock-held'];
/** The hogs each scenario starts, by the name of their log in busy.tgz (runs/<scenario>.<hog>.log). */
const HOGS: Record<string, string[]> = { 'host-hog': ['hog-host'], 'link-hog': ['hog-link'], 'both-hogs': ['hog-host', 'hog-link'], 'lock-held': ['hog-lock'] };
/** Every run of the script: the smallest window, and the self-test alone (what the gate times; the hazard checks
 * add CPU and nothing this plumbing test reads). */
const ARGS = ['--backend', 'cuda', '--size', '8', '--check', 'probe.verdict'];

/** The script's environment: everything against the double, paced (so the link hog mostly sleeps), hogs small; TMPDIR its own. */
function env(tmp: string): NodeJS.ProcessEnv {
  return cleanEnv({
    TMPDIR: tmp,
    MAPPED_REG_SHIM_REAL: doubles.cuda,
    MAPPED_REG_HOG_CUDA_LIBRARY: doubles.cuda,
    MAPPED_REG_DOUBLE_RATES: 'registered=2,pinned=1.5,pageable=0.5',
    MAPPED_REG_BUSY_HOST_THREADS: '1',
    MAPPED_REG_BUSY_HOG_MIB: '8',
  });
}

/** A hog process that still runs (its pid, not reused by another program). */
const hogAlive = (pid: number): boolean => running(pid) && /hog-(host|link|lock)/.test(commandLine(pid));

describe('scripts/h200/busy.sh against the CUDA double (plumbing only)', () => {
  it('runs every scenario with its hogs, writes busy.txt and busy.tgz, leaves nothing behind', () => {
    const out = join(work, 'out');
    const tmp = mkdtempSync(join(work, 'tmp-'));
    const r = spawnSync('bash', [SCRIPT, out, ...ARGS], { cwd: work, env: env(tmp), encoding: 'utf8', timeout: 280_000 });
    const said = `${r.stdout}${r.stderr}`;
    expect([0, 1], said).toContain(r.status); // 1: an expectation failed (see above), never a crash of the script
    const text = readFileSync(join(out, 'busy.txt'), 'utf8');
    expect(r.stdout).toBe(text);
    const lines = text.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^scenario +expected +exit +reg +locked +ratio +host +busy +held +the gate$/);
    const rows = lines.slice(1, 1 + SCENARIOS.length).map((l) => l.split(/\s+/));
    expect(rows.map((c) => c[0])).toEqual(SCENARIOS);
    for (const c of rows) {
      expect(c[1], c[0]).toMatch(/^[01]$/);
      expect(c[2], c[0]).toMatch(/^\d+$/); // every scenario ran the command (its hogs started)
      expect(c[8], c[0]).toMatch(/^(yes|no)$/);
    }
    // the quiet baseline against the double: it passes, and its registered figure is read from the JSON
    expect(rows[0]!.slice(0, 4).concat(rows[0]![8]!)).toEqual(['baseline', '0', '0', expect.stringMatching(/^\d+\.\d\d$/), 'yes']);
    const failed = rows.filter((c) => c[8] === 'no').map((c) => c[0]!);
    // each scenario whose expectations failed says why, then the count
    for (const name of failed) expect(text).toMatch(new RegExp(`^${name}: .+$`, 'm'));
    expect(lines.at(-1)).toBe(`${failed.length} scenario(s) whose expectations did not hold`);
    expect(r.status).toBe(failed.length === 0 ? 0 : 1);

    const unpacked = join(work, 'unpacked');
    mkdirSync(unpacked);
    const tar = spawnSync('tar', ['-C', unpacked, '-xzf', join(out, 'busy.tgz')], { encoding: 'utf8' });
    expect(tar.status, tar.stderr).toBe(0);
    const runs = readdirSync(join(unpacked, 'runs'));
    for (const name of SCENARIOS) expect(runs, name).toContain(`${name}.log`);
    expect(runs).toContain('baseline.json');
    expect(existsSync(join(unpacked, 'baseline.json'))).toBe(true);
    const pids: number[] = [];
    for (const name of SCENARIOS) {
      const hogs = runs.filter((f) => f.startsWith(`${name}.hog-`)).map((f) => f.slice(name.length + 1, -'.log'.length));
      expect(hogs.sort(), name).toEqual(HOGS[name] ?? []);
      for (const hog of hogs) {
        const log = readFileSync(join(unpacked, 'runs', `${name}.${hog}.log`), 'utf8');
        // running before the command, then stopped by the script's SIGTERM: it printed its own figure (the lock
        // hog: how long it held the lock)
        const m = new RegExp(`^${hog}: pid (\\d+) running: .*\\n${hog}: (\\d+\\.\\d\\d GB/s .*|released after \\d+\\.\\d s)\\n$`).exec(log);
        expect(m, `${name}: ${log}`).not.toBeNull();
        pids.push(Number(m![1]));
      }
    }
    expect(pids).toHaveLength(5);
    for (const pid of pids) expect(hogAlive(pid), String(pid)).toBe(false);
    expect(readdirSync(tmp)).toEqual([]); // its temporary folder (shim, hogs, runs, scratch) removed
  }, 300_000);

  it('stopped by SIGTERM while a hog runs: exit 143, the hog killed, its temporary folder removed', async () => {
    const out = join(work, 'out-term');
    const tmp = mkdtempSync(join(work, 'tmp-'));
    const child = spawn('bash', [SCRIPT, out, ...ARGS], { cwd: work, env: env(tmp), stdio: 'ignore' });
    const exit = new Promise<number | null>((done) => child.on('close', (code, signal) => done(code ?? (signal ? -1 : null))));
    const seen = new Set<number>();
    // every hog pid the script's logs show, until the first hog of host-hog is running
    const hogLogs = (): string[] => {
      const dirs = readdirSync(tmp).map((d) => join(tmp, d, 'runs'));
      return dirs.flatMap((d) => (existsSync(d) ? readdirSync(d).filter((f) => /\.hog-/.test(f)).map((f) => join(d, f)) : []));
    };
    await waitUntil(() => {
      for (const f of hogLogs()) {
        const m = /pid (\d+) running:/.exec(readFileSync(f, 'utf8'));
        if (m) seen.add(Number(m[1]));
      }
      return seen.size > 0;
    }, 240_000, 'a hog running');
    child.kill('SIGTERM');
    expect(await exit).toBe(143);
    for (const pid of seen) expect(hogAlive(pid), String(pid)).toBe(false);
    expect(readdirSync(tmp)).toEqual([]);
  }, 300_000);
});
