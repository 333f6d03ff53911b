// Every output checked before anything runs; standard output and other non-regular
// targets written in place, regular files through an exclusive, randomly named temporary file; a failing
// standard output does not lose the run; an option without its value is bad usage.
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, closeSync, existsSync, lstatSync, mkdirSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { constants as fsConstants, readSync } from 'node:fs';
import { tempNameFor, writeAtomically } from '../cli/outputs.js';
import { MAIN, ROOT, cleanEnv } from './support/command.js';
import { startCli } from './support/processes.js';

const work = mkdtempSync(join(tmpdir(), 'mapped-reg-outputs-'));
const readOnly = join(work, 'read-only');
const fixture = join(ROOT, 'test', 'fixtures', 'cuda.json');

beforeAll(() => {
  mkdirSync(readOnly);
  writeFileSync(join(work, 'existing.json'), '{}\n');
  // a read-only file system (as root, permission bits alone do not stop a write): CI runs as root, like here
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', readOnly]);
  writeFileSync(join(readOnly, 'summary.md'), '# earlier step\n');
  execFileSync('mount', ['-o', 'remount,ro', readOnly]);
});
afterAll(() => {
  spawnSync('umount', [readOnly]);
  rmSync(work, { recursive: true, force: true });
});

function cli(args: string[], env: Record<string, string> = {}) {
  // at most 60 s: a command that waits forever (an output it cannot open) is killed, and its test fails
  const r = spawnSync(process.execPath, [MAIN, ...args], { env: cleanEnv(env), encoding: 'utf8', cwd: work, timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Everything a named pipe's reader `fd` (opened non-blocking) gets until `exit` settles and the pipe is empty. */
async function drain(fd: number, exit: Promise<unknown>): Promise<string> {
  let ended = false;
  void exit.then(() => (ended = true));
  const chunks: Buffer[] = [];
  const buf = Buffer.alloc(65536);
  for (;;) {
    let n = 0;
    try {
      n = readSync(fd, buf, 0, buf.length, null);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EAGAIN') throw e;
    }
    if (n > 0) chunks.push(Buffer.from(buf.subarray(0, n)));
    else if (ended) break;
    else await new Promise((r) => setTimeout(r, 20));
  }
  closeSync(fd);
  return Buffer.concat(chunks).toString('utf8');
}

describe('item 2: every output is checked before any device runs (exit 2, one line, nothing run)', () => {
  const folder = join(work, 'a-folder');
  mkdirSync(folder, { recursive: true });
  const cases: [string, string[], Record<string, string>, RegExp][] = [
    ['--json in a folder that does not exist', ['--json', '/nonexistent/x.json'], {}, /--json \/nonexistent\/x\.json: the folder \/nonexistent does not exist/],
    ['--json naming a folder', ['--json', folder], {}, /--json .*a-folder: is a folder/],
    ['--junit on a read-only file system', ['--junit', join(readOnly, 'j.xml')], {}, /--junit .*read-only\/j\.xml: the folder .* is on a read-only file system/],
    ['an unwritable GITHUB_STEP_SUMMARY (on a read-only file system)', [], { GITHUB_STEP_SUMMARY: join(readOnly, 'summary.md') }, /GITHUB_STEP_SUMMARY .*summary\.md: is on a read-only file system/],
    ['a GITHUB_STEP_SUMMARY in a folder that does not exist', [], { GITHUB_STEP_SUMMARY: join(work, 'missing', 'summary.md') }, /GITHUB_STEP_SUMMARY .*: the folder .*missing does not exist/],
    ["--json ''", ['--json', ''], {}, /--json '': an empty file name/],
    ['--json and --junit naming the same file', ['--json', 'same.xml', '--junit', 'same.xml'], {}, /--json and --junit name the same file/],
    ['--json and --junit naming the same file, once through a symbolic link', ['--json', 'existing.json', '--junit', 'link-to-existing.json'], {}, /--json and --junit name the same file/],
    ['--json - and --junit /dev/stdout', ['--json', '-', '--junit', '/dev/stdout'], {}, /--json and --junit name the same standard output/],
  ];
  beforeAll(() => symlinkSync(join(work, 'existing.json'), join(work, 'link-to-existing.json')));
  for (const [what, args, env, message] of cases) {
    it(what, () => {
      const scratch = mkdtempSync(join(work, 'scratch-'));
      const r = cli(['--backend', 'cpu', '--scratch-dir', scratch, ...args], env);
      expect(r.stderr.trimEnd().split('\n')).toEqual([expect.stringMatching(message)]);
      expect(r.code).toBe(2);
      expect(r.stdout).not.toMatch(/checks \(/); // nothing ran
      expect(readdirSync(scratch)).toEqual([]);
      expect(readFileSync(join(work, 'existing.json'), 'utf8')).toBe('{}\n');
    });
  }

  it('merge -o into a folder that does not exist, report --html at a folder: refused before reading anything else', () => {
    const m = cli(['merge', fixture, '-o', join(work, 'nope', 'fleet.json')]);
    expect(m.code).toBe(2);
    expect(m.stderr.trimEnd().split('\n')).toEqual([expect.stringMatching(/-o .*nope\/fleet\.json: the folder .*nope does not exist/)]);
    const r = cli(['report', fixture, '--html', folder]);
    expect(r.code).toBe(2);
    expect(r.stderr.trimEnd().split('\n')).toEqual([expect.stringMatching(/--html .*a-folder: is a folder/)]);
    expect(readdirSync(folder)).toEqual([]);
  });
});

describe('item 3: standard output and other targets that are not regular files are written in place', () => {
  it("--json through a symbolic link to /dev/stdout: the JSON goes to standard output, the link stays (the command's own text goes to stderr)", () => {
    const link = join(work, 'stdout-link');
    symlinkSync('/dev/stdout', link);
    const r = cli(['--backend', 'cpu', '--scratch-dir', mkdtempSync(join(work, 'scratch-')), '--json', link]);
    expect(r.code).toBe(0);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(JSON.parse(r.stdout).schemaVersion).toBe(3);
    expect(r.stderr).toMatch(/checks \(/);
  });

  it('--json - : standard output holds the JSON alone; merge -o - and report --html - too', () => {
    const r = cli(['--backend', 'cpu', '--scratch-dir', mkdtempSync(join(work, 'scratch-')), '--json', '-']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).devices.map((d: { id: string }) => d.id)).toEqual(['cpu']);
    expect(r.stderr).toMatch(/^1 device in /m);
    const m = cli(['merge', fixture, '-o', '-']);
    expect(m.code).toBe(0);
    expect(JSON.parse(m.stdout).devices).toHaveLength(1);
    const h = cli(['report', fixture, '--html', '-']);
    expect(h.code).toBe(0);
    expect(h.stdout).toMatch(/^<!DOCTYPE html>/i);
  });

  it('--junit to a named pipe with its reader: written in place, the pipe is not replaced', async () => {
    const fifo = join(work, 'junit.fifo');
    execFileSync('mkfifo', [fifo]);
    // the reader first (opened without blocking), as `cat junit.fifo & mapped-reg-conformance --junit junit.fifo`
    const reader = openSync(fifo, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
    const c = startCli(['--backend', 'cpu', '--scratch-dir', mkdtempSync(join(work, 'scratch-')), '--junit', fifo], {}, work);
    const xml = await drain(reader, c.exit);
    const { code } = await c.exit;
    expect(code).toBe(0);
    expect(xml).toMatch(/<testsuite name="cpu /);
    expect(lstatSync(fifo).isFIFO()).toBe(true);
  });

  it('an output to a named pipe with no reader: refused before the run (exit 2, one line), never an open that waits forever with the signals unanswered', () => {
    const fifo = join(work, 'no-reader.fifo');
    execFileSync('mkfifo', [fifo]);
    for (const [args, env, label] of [
      [['--json', fifo], {}, '--json'],
      [['--junit', join(work, 'j.xml'), '--metrics', fifo], {}, '--metrics'],
      [[], { GITHUB_STEP_SUMMARY: fifo }, 'GITHUB_STEP_SUMMARY'],
    ] as [string[], Record<string, string>, string][]) {
      const scratch = mkdtempSync(join(work, 'scratch-'));
      const r = cli(['--backend', 'cpu', '--scratch-dir', scratch, ...args], env);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr.trimEnd().split('\n')).toEqual([`mapped-reg-conformance: ${label} ${fifo}: a named pipe with no reader (ENXIO): start its reader first, or name a file`]);
      expect(r.stdout).not.toMatch(/checks \(/); // nothing ran
      expect(existsSync(join(work, 'j.xml'))).toBe(false);
    }
    const m = cli(['merge', '-o', fifo, fixture]);
    expect([m.code, m.stderr.trim()]).toEqual([2, `mapped-reg-conformance: -o ${fifo}: a named pipe with no reader (ENXIO): start its reader first, or name a file`]);
    const h = cli(['report', '--html', fifo, fixture]);
    expect([h.code, h.stderr.trim()]).toEqual([2, `mapped-reg-conformance: --html ${fifo}: a named pipe with no reader (ENXIO): start its reader first, or name a file`]);
  });

  it('an output name whose temporary file would be too long: refused before the run (the check makes the very temporary name the write uses)', () => {
    // 255 bytes is ext4's and tmpfs's limit; the temporary file is .NAME.<16 hex>.tmp, 22 bytes longer
    const longest = `${'a'.repeat(233 - 5)}.json`;
    const tooLong = `${'b'.repeat(234 - 5)}.json`;
    expect(tempNameFor(join(work, longest)).length - join(work, longest).length).toBe(22);
    expect(tempNameFor(join(work, 'x.json'))).toMatch(new RegExp(`^${work.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/\\.x\\.json\\.[0-9a-f]{16}\\.tmp$`));
    for (const option of ['--json', '--junit', '--metrics']) {
      const scratch = mkdtempSync(join(work, 'scratch-'));
      const r = cli(['--backend', 'cpu', '--scratch-dir', scratch, option, join(work, tooLong)]);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr.trimEnd().split('\n')).toEqual([expect.stringMatching(new RegExp(`^mapped-reg-conformance: ${option} .*b{200}.*: the name is too long: the temporary file written beside it \\(\\.b{20}….<16 hex digits>\\.tmp, 22 bytes longer\\) is over its file system's limit \\(name a shorter file\\)$`))]);
      expect(r.stdout).not.toMatch(/checks \(/);
    }
    // 233 bytes: its temporary file is 255, which the file system takes
    const r = cli(['--backend', 'cpu', '--scratch-dir', mkdtempSync(join(work, 'scratch-')), '--json', join(work, longest)]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(readFileSync(join(work, longest), 'utf8'))).toMatchObject({ schemaVersion: 3 });
  });

  it('the atomic write: an exclusive temporary file with a random name (a prepared link at the old predictable name is not followed), the mode of the file it replaces', () => {
    const dir = mkdtempSync(join(work, 'atomic-'));
    const target = join(dir, 'r.json');
    const victim = join(work, 'victim.txt');
    writeFileSync(victim, 'untouched\n');
    // the name the write used to take: .<name>.<pid>.tmp, beside the file
    symlinkSync(victim, join(dir, `.r.json.${process.pid}.tmp`));
    writeFileSync(target, 'old\n');
    chmodSync(target, 0o640);
    writeAtomically(target, 'new\n');
    expect(readFileSync(victim, 'utf8')).toBe('untouched\n');
    expect(readFileSync(target, 'utf8')).toBe('new\n');
    expect(statSync(target).mode & 0o777).toBe(0o640);
    expect(readdirSync(dir).sort()).toEqual([`.r.json.${process.pid}.tmp`, 'r.json']);
    const fresh = join(dir, 'new.json');
    writeAtomically(fresh, 'x\n');
    expect(statSync(fresh).mode & 0o777).toBe(0o644 & ~process.umask());
  });
});

describe('item 9: standard streams and arguments', () => {
  it('a reader that closes early (| head -1): the run finishes, the JSON is written, one line on stderr, the run\'s exit status', async () => {
    const json = join(work, 'head.json');
    const c = startCli(['--backend', 'cpu', '--scratch-dir', mkdtempSync(join(work, 'scratch-')), '--json', json], {}, work, ['ignore', 'pipe', 'pipe']);
    // as head -1 does: read the first line, then close the pipe
    await c.waitFor(/\n/);
    c.child.stdout!.destroy();
    const { code } = await c.exit;
    expect(code).toBe(0);
    expect(JSON.parse(readFileSync(json, 'utf8')).devices).toHaveLength(1);
    expect(c.stderr().trimEnd().split('\n')).toEqual([expect.stringMatching(/standard output failed \(EPIPE\)/)]);
  });

  it('standard output on a full device (/dev/full): the JSON is written, one line on stderr, no stack trace, exit 0', () => {
    const json = join(work, 'full.json');
    const full = openSync('/dev/full', 'w');
    try {
      const r = spawnSync(process.execPath, [MAIN, '--backend', 'cpu', '--scratch-dir', mkdtempSync(join(work, 'scratch-')), '--json', json], { env: cleanEnv(), encoding: 'utf8', cwd: work, stdio: ['ignore', full, 'pipe'] });
      expect(r.stderr.trimEnd().split('\n')).toEqual([expect.stringMatching(/standard output failed \(ENOSPC\)/)]);
      expect(r.status).toBe(0);
    } finally {
      closeSync(full);
    }
    expect(JSON.parse(readFileSync(json, 'utf8')).devices).toHaveLength(1);
  });

  for (const option of ['--size', '--json', '--device', '--timeout']) {
    it(`${option} without its value is bad usage: exit 2, one line, nothing run`, () => {
      const r = cli(['--backend', 'cpu', '--scratch-dir', mkdtempSync(join(work, 'scratch-')), option]);
      expect(r.code).toBe(2);
      expect(r.stderr.trimEnd().split('\n')).toEqual([expect.stringMatching(new RegExp(`^mapped-reg-conformance: .*${option.slice(2)}`))]);
      expect(r.stdout).toBe('');
    });
  }

  it('a file that is not JSON is refused without its control characters reaching the terminal', () => {
    const bad = join(work, 'escape.json');
    writeFileSync(bad, '\x1b]0;pwned\x07\x1b[2J{not json');
    const r = cli(['compare', fixture, bad]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/escape\.json: not valid JSON/);
    expect(r.stderr).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f]/);
    expect(r.stderr).toMatch(/\\x1b/);
  });

  it('no report is written half: with --json and --junit given, a run that cannot write one (checked up front) writes neither', () => {
    const json = join(work, 'half.json');
    const r = cli(['--backend', 'cpu', '--json', json, '--junit', join(readOnly, 'j.xml')]);
    expect(r.code).toBe(2);
    expect(existsSync(json)).toBe(false);
  });
});

describe('the documentation (docs/usage.md, docs/development.md) and --help say the same as the code', () => {
  it('exit statuses 129, 130, 143; - for standard output; the error status; where scratch and tmpfs files go and how stale ones are cleaned', () => {
    const help = cli(['--help']).stdout.replace(/\s+/g, ' ');
    const readme = ['usage.md', 'development.md'].map((f) => readFileSync(join(ROOT, 'docs', f), 'utf8')).join('\n').replace(/\s+/g, ' ');
    for (const text of [help, readme]) {
      expect(text).toMatch(/130, 143, 129 stopped by SIGINT, SIGTERM, SIGHUP/);
      expect(text).toMatch(/- for standard output/);
      expect(text).toMatch(/status `?error`?/);
      expect(text).toMatch(/\/dev\/shm/);
      expect(text).toMatch(/\.mapped-reg-<pid>-\*/);
      expect(text).toMatch(/lock/);
    }
    expect(readme).toMatch(/200 characters, a message .* at 2000/);
    expect(readme).toMatch(/MAPPED_REG_FORCE_KILL/);
  });
});
