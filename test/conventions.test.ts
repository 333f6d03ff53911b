// The command line's conventions: short aliases, a usage and a --help that say everything and only what their
// command has, a listing that its reader may stop early, progress without cursor escapes where they cannot or
// should not be used, and a log that tells a check is still running.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { LIBRARY_VARIABLES } from '../cli/options.js';
import { Progress } from '../reporters/terminal.js';
import { buildDoubles } from './double/build.js';
import { MAIN, ROOT, cleanEnv } from './support/command.js';

const work = mkdtempSync(join(tmpdir(), 'mapped-reg-conventions-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };

function cli(args: string[], env: Record<string, string | undefined> = {}) {
  const r = spawnSync(process.execPath, [MAIN, ...args], { env: cleanEnv(env), encoding: 'utf8', cwd: work });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const quote = (s: string): string => `'${s.replaceAll("'", `'\\''`)}'`;

/** The command run on a pseudo-terminal (util-linux `script`): what a user's terminal receives. */
function onTerminal(args: string[], env: Record<string, string | undefined>) {
  const command = [process.execPath, MAIN, ...args].map(quote).join(' ');
  const r = spawnSync('script', ['-qec', command, '/dev/null'], { env: cleanEnv(env), encoding: 'utf8', cwd: work });
  expect(r.error).toBeUndefined();
  return { code: r.status, output: r.stdout };
}

describe('help and version', () => {
  it('-h is --help and -V is --version', () => {
    const help = cli(['--help']);
    expect(help.code).toBe(0);
    expect(cli(['-h'])).toEqual(help);
    const version = cli(['--version']);
    expect(version).toEqual({ code: 0, stdout: `${pkg.version}\n`, stderr: '' });
    expect(cli(['-V'])).toEqual(version);
  });

  it('the usage names every command, history included', () => {
    const { stdout } = cli(['--help']);
    // yargs wraps the usage line at 80 columns: read as one line
    expect(stdout.split('\n\n')[0]!.replace(/\s+/g, ' ')).toBe('mapped-reg-conformance [run|list|compare|merge|report|runtimes|history] [options]');
    for (const command of ['run', 'list', 'compare', 'merge', 'report', 'runtimes', 'history']) expect(stdout).toMatch(new RegExp(`^  mapped-reg-conformance ${command}\\b`, 'm'));
  });

  it('--help names the library variable of every backend that loads one', () => {
    expect(LIBRARY_VARIABLES).toEqual(['MAPPED_REG_CUDA_LIBRARY', 'MAPPED_REG_HIP_LIBRARY', 'MAPPED_REG_OPENCL_LIBRARY', 'MAPPED_REG_VULKAN_LIBRARY']);
    const { stdout } = cli(['--help']);
    for (const v of LIBRARY_VARIABLES) expect(stdout).toContain(v);
  });

  for (const command of [['compare'], ['history', 'compare'], ['history', 'report']]) {
    it(`${command.join(' ')} --help speaks of its own inputs, not of --baseline (which it does not take)`, () => {
      const r = cli([...command, '--help']);
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/--max-drop/);
      expect(r.stdout).not.toMatch(/baseline/i);
      expect(r.stdout).toMatch(/from the old\s+results to the new/);
    });
  }

  it('run --help still explains --baseline (the gate is run\'s)', () => {
    expect(cli(['run', '--help']).stdout).toMatch(/--baseline/);
  });
});

describe('a listing its reader stops early', () => {
  it('list --checks to a pipe already closed: no word on stderr, exit 0', async () => {
    const child = spawn(process.execPath, [MAIN, 'list', '--checks'], { env: cleanEnv(), cwd: work, stdio: ['ignore', 'pipe', 'pipe'] });
    // closed before the command writes anything: its first write meets EPIPE
    child.stdout.destroy();
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (t: string) => (stderr += t));
    const code = await new Promise<number | null>((done) => child.on('close', done));
    expect(stderr).toBe('');
    expect(code).toBe(0);
  });

  it('list --checks | head -1: the first check, and nothing on stderr', () => {
    const r = spawnSync('sh', ['-c', `${quote(process.execPath)} ${quote(MAIN)} list --checks | head -1`], { env: cleanEnv(), encoding: 'utf8', cwd: work });
    expect(r.stdout).toMatch(/^static\.verdict +\S.*\n$/);
    expect(r.stderr).toBe('');
  });

  it('a run (not a listing) still tells that its standard output was lost', async () => {
    const scratch = mkdtempSync(join(work, 'scratch-'));
    const child = spawn(process.execPath, [MAIN, '--backend', 'cpu', '--scratch-dir', scratch], { env: cleanEnv(), cwd: work, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.destroy();
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (t: string) => (stderr += t));
    await new Promise((done) => child.on('close', done));
    expect(stderr).toMatch(/standard output failed \(EPIPE\)/);
  });
});

describe('progress on a terminal', () => {
  const run = (env: Record<string, string | undefined>) => onTerminal(['--backend', 'cpu', '--scratch-dir', mkdtempSync(join(work, 'scratch-'))], env);

  it('is redrawn with cursor escapes on a terminal that can (the control)', () => {
    const r = run({ TERM: 'xterm', NO_COLOR: undefined });
    expect(r.code).toBe(0);
    expect(r.output).toMatch(/\x1b\[\d+A/);
  });

  for (const env of [{ TERM: 'dumb', NO_COLOR: undefined }, { TERM: 'xterm', NO_COLOR: '1' }]) {
    it(`has no escape at all with ${Object.entries(env).filter(([, v]) => v !== undefined).map(([k, v]) => `${k}=${v}`).join(' ')}: the log's plain lines`, () => {
      const r = run(env);
      expect(r.code).toBe(0);
      expect(r.output).not.toMatch(/\x1b/);
      expect(r.output).toMatch(/cpu static\.verdict pass/);
    });
  }
});

describe('a check still running, not on a terminal', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('Progress tells it every 10 s, with its id and how long, and stops once it ends', () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'performance'] });
    const lines: string[] = [];
    const p = new Progress((t) => lines.push(t), false, ['cuda:0', 'cpu']);
    p.event('cuda:0', { type: 'start', id: 'probe.verdict' });
    vi.advanceTimersByTime(9_000);
    expect(lines).toEqual([]);
    vi.advanceTimersByTime(1_000);
    expect(lines).toEqual([expect.stringMatching(/^ {2}\[10\.0 s\] cuda:0 probe\.verdict still running \(10 s\)\n$/)]);
    vi.advanceTimersByTime(10_000);
    expect(lines[1]).toMatch(/cuda:0 probe\.verdict still running \(20 s\)\n$/);
    p.event('cuda:0', { type: 'result', id: 'probe.verdict', status: 'pass' });
    vi.advanceTimersByTime(30_000);
    expect(lines).toHaveLength(3);
    expect(lines[2]).toMatch(/cuda:0 probe\.verdict pass/);
    p.finish();
  });

  it('on a terminal the status line says it instead: no still-running line', () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'performance'] });
    const lines: string[] = [];
    const p = new Progress((t) => lines.push(t), true, ['cuda:0']);
    p.event('cuda:0', { type: 'start', id: 'probe.verdict' });
    vi.advanceTimersByTime(25_000);
    expect(lines.join('')).not.toMatch(/still running/);
    expect(lines.at(-1)).toMatch(/probe\.verdict/);
    p.finish();
  });

  describe('through the command', () => {
    let cuda: string;
    beforeAll(() => {
      cuda = buildDoubles().cuda;
    });

    it('a check that hangs: a line at 10 s naming it, then its timeout', () => {
      const scratch = mkdtempSync(join(work, 'scratch-'));
      const r = spawnSync(process.execPath, [MAIN, '--device', 'cuda:0', '--size', '8', '--scratch-dir', scratch, '--timeout', '12'], {
        env: cleanEnv({ MAPPED_REG_CUDA_LIBRARY: cuda, MAPPED_REG_FORCE_HANG: 'probe.release' }),
        encoding: 'utf8',
        cwd: work,
      });
      expect(r.stdout).toMatch(/^ {2}\[\d+\.\d s\] cuda:0 probe\.release still running \(10 s\)$/m);
      expect(r.stdout).not.toMatch(/still running \(20 s\)/);
      expect(r.stdout).toMatch(/cuda:0 probe\.release timeout/);
      expect(r.status).toBe(1);
    }, 60_000);
  });
});
