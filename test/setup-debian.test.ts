// The README's first commands on a fresh Debian machine: scripts/setup-debian.sh installs what the tests need
// (run here against stand-ins for apt-get, dpkg-query, sudo, id and node that record what they are asked), and
// the README and .ci/run both start with it.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from './support/command.js';

const work = mkdtempSync(join(tmpdir(), 'mapped-reg-setup-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
const SCRIPT = join(ROOT, 'scripts', 'setup-debian.sh');
/** What the tests load for real: the C compiler, PoCL, lavapipe, chromium and a font, xmllint. */
const NEEDED = ['ocl-icd-libopencl1', 'pocl-opencl-icd', 'libvulkan1', 'mesa-vulkan-drivers', 'gcc', 'libc6-dev', 'chromium', 'fonts-dejavu-core', 'libxml2-utils'];

let serial = 0;
/** Runs the script with stand-ins: `uid`, the installed packages, the Node.js major version node reports. */
function setup(o: { uid: number; installed: string[] | 'all'; nodeMajor: number }) {
  const dir = join(work, `m${serial++}`);
  const bin = join(dir, 'bin');
  mkdirSync(bin, { recursive: true });
  const log = join(dir, 'calls.log');
  const stub = (name: string, body: string): void => {
    writeFileSync(join(bin, name), `#!/bin/sh\n${body}\n`);
    chmodSync(join(bin, name), 0o755);
  };
  stub('id', `[ "$1" = -u ] && echo ${o.uid}`);
  stub('sudo', `echo "sudo $*" >> ${log}; exec "$@"`);
  stub('apt-get', `echo "apt-get $*" >> ${log}`);
  const installed = o.installed === 'all' ? "echo 'install ok installed'" : `case "$3" in ${o.installed.length ? `${o.installed.join('|')}) echo 'install ok installed';;` : ''} *) exit 1;; esac`;
  stub('dpkg-query', installed);
  stub('node', `case "$1" in -p) echo ${o.nodeMajor};; --version) echo v${o.nodeMajor}.0.0;; esac`);
  stub('npm', 'echo 10.9.0');
  const r = spawnSync('bash', [SCRIPT], { encoding: 'utf8', env: { PATH: `${bin}:/usr/bin:/bin`, HOME: dir } });
  let calls: string[] = [];
  try {
    calls = readFileSync(log, 'utf8').trimEnd().split('\n');
  } catch {
    // nothing was called
  }
  return { code: r.status, stderr: r.stderr, stdout: r.stdout, calls };
}

describe('scripts/setup-debian.sh', () => {
  it('a fresh machine, not root, Node.js 20: every package the tests load, through sudo, in one apt-get install', () => {
    const r = setup({ uid: 1000, installed: [], nodeMajor: 20 });
    expect(r.code, r.stderr).toBe(0);
    const install = r.calls.filter((c) => c.startsWith('apt-get install'));
    expect(install).toHaveLength(1);
    const names = install[0]!.split(' ').filter((w) => !w.startsWith('-')).slice(2);
    expect(names).toEqual(expect.arrayContaining(NEEDED));
    expect(names).not.toContain('nodejs');
    expect(r.calls.filter((c) => c.startsWith('sudo'))).toHaveLength(2);
    expect(r.calls.indexOf(r.calls.find((c) => c.startsWith('apt-get update'))!)).toBeLessThan(r.calls.indexOf(install[0]!));
  });

  it('only what is missing is installed; nothing when everything is there (as root: no sudo)', () => {
    const some = setup({ uid: 0, installed: NEEDED.slice(0, 5), nodeMajor: 22 });
    expect(some.code).toBe(0);
    const names = some.calls.find((c) => c.startsWith('apt-get install'))!.split(' ');
    for (const p of NEEDED.slice(0, 5)) expect(names).not.toContain(p);
    for (const p of NEEDED.slice(5)) expect(names).toContain(p);
    expect(some.calls.some((c) => c.startsWith('sudo'))).toBe(false);
    const none = setup({ uid: 0, installed: 'all', nodeMajor: 20 });
    expect(none.code).toBe(0);
    expect(none.calls).toEqual([]);
    expect(none.stdout).toMatch(/Node\.js v20\.0\.0/);
  });

  it('Node.js older than 20: Debian\'s nodejs and npm are asked for, and a Node.js still too old stops it with one line saying where to get one', () => {
    const r = setup({ uid: 0, installed: [], nodeMajor: 18 });
    expect(r.calls.find((c) => c.startsWith('apt-get install'))!.split(' ')).toEqual(expect.arrayContaining(['nodejs', 'npm']));
    expect(r.code).toBe(1);
    expect(r.stderr.trimEnd().split('\n')).toEqual([expect.stringMatching(/Node\.js v18\.0\.0 is older than 20.*install Node\.js 20 from nodejs\.org/)]);
  });
});

describe('the README and CI start with it', () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');

  it('the README is short, and its first lines are two commands: set up and run the command; set up and pass the tests', () => {
    expect(readme.split('\n').length).toBeLessThanOrEqual(150);
    const first = /```sh\n([\s\S]*?)```/.exec(readme)!;
    expect(first.index).toBeLessThan(200);
    const commands = first[1]!.trimEnd().split('\n').map((l) => l.replace(/\s+#.*$/, ''));
    expect(commands).toEqual(['scripts/setup-debian.sh && npm ci && npx mapped-reg-conformance', 'scripts/setup-debian.sh && npm ci && npm test']);
    expect(statSync(SCRIPT).mode & 0o111).not.toBe(0);
  });

  it('.ci/run runs the same script before npm ci and npm test', () => {
    const lines = readFileSync(join(ROOT, '.ci', 'run'), 'utf8').split('\n').filter((l) => l && !l.startsWith('#') && !l.startsWith('set ') && !l.startsWith('cd '));
    expect(lines).toEqual(['bash scripts/setup-debian.sh', 'npm ci --no-audit --no-fund', 'npm test']);
  });

  it('every file the README names exists', () => {
    const named = [...readme.matchAll(/`((?:docs|scripts|\.ci)\/[\w./-]+|LICENSE)`/g)].map((m) => m[1]!);
    expect(named.length).toBeGreaterThan(10);
    for (const f of named) expect(() => statSync(join(ROOT, f)), f).not.toThrow();
  });
});
