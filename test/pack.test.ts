// The package as a user gets it: `npm pack`, then
// - `npx --yes ./mapped-reg-conformance-*.tgz` in an empty folder on a machine with no GPU (dependencies come from
//   the npm registry);
// - the container image's install (Dockerfile), made without Docker (no engine here): the last stage's RUN, as
//   written, run by /bin/sh with its ARGs in the environment, npm's global prefix an empty folder instead of
//   /usr/local, and the tarball where the first stage's `npm pack` puts it. Its installed size is measured and
//   bounded (see SIZE_BOUND_MIB).
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, cleanEnv } from './support/command.js';

const root = ROOT;
const work = mkdtempSync(join(tmpdir(), 'mapped-reg-pack-'));
afterAll(() => rmSync(work, { recursive: true, force: true, maxRetries: 5 }), 120_000);
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string; peerDependencies: Record<string, string> };

const packs = join(work, 'packs');
let tgz: string;
beforeAll(() => {
  mkdirSync(packs);
  // the tree the global setup built (scripts/prepare.mjs): `prepare` is not run again, so dist/ is never rebuilt
  // (nor a file of it removed) while other test files run the command from it
  execFileSync('npm', ['pack', '--ignore-scripts', '--pack-destination', packs], { cwd: root, stdio: 'ignore', env: npmEnv() });
  [tgz] = readdirSync(packs) as [string];
  expect(tgz).toMatch(/^mapped-reg-conformance-.*\.tgz$/);
}, 120_000);

/** The tests' environment without npm's own variables (npm test sets npm_*: a user's shell has none). */
function npmEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env = cleanEnv(extra);
  for (const k of Object.keys(env)) if (k.startsWith('npm_') && !(k in extra)) delete env[k];
  return env;
}

it('npx runs the packed tarball in an empty folder, with no GPU', () => {
  const empty = join(work, 'empty');
  mkdirSync(empty);
  copyFileSync(join(packs, tgz), join(empty, tgz));
  const r = spawnSync('npx', ['--yes', `./${tgz}`, '--size', '8', '--json', 'r.json'], { cwd: empty, env: cleanEnv(), encoding: 'utf8' });
  expect(r.stderr).not.toMatch(/ERR!|npm error/);
  expect(r.status).toBe(0);
  expect(r.stdout).toMatch(/no GPU driver was found/);
  expect(r.stdout).toMatch(/^cpu .*Not_needed/m);
  expect(r.stdout).toMatch(/cpu static\.verdict pass/);
  expect(readdirSync(empty).sort()).toEqual(['r.json', tgz].sort());
}, 300_000);

// ---- the container image ----

interface Instruction {
  keyword: string;
  /** The rest of the instruction, continuation lines joined. */
  args: string;
}

/** The Dockerfile's stages, each a list of instructions (comments dropped, `\` continuations joined). */
function dockerStages(text: string): Instruction[][] {
  const stages: Instruction[][] = [];
  let pending = '';
  for (const raw of text.split('\n')) {
    if (/^\s*#/.test(raw) && pending === '') continue;
    if (/^\s*$/.test(raw) && pending === '') continue;
    const line = raw.replace(/\s+$/, '');
    if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1)}\n`;
      continue;
    }
    const full = pending + line;
    pending = '';
    const m = /^\s*([A-Za-z]+)\s+([\s\S]*)$/.exec(full);
    if (!m) throw new Error(`Dockerfile: not an instruction: ${full}`);
    const ins = { keyword: m[1]!.toUpperCase(), args: m[2]!.trim() };
    if (ins.keyword === 'FROM') stages.push([]);
    if (!stages.length) throw new Error('Dockerfile: an instruction before the first FROM');
    stages.at(-1)!.push(ins);
  }
  return stages;
}

const image = (): Instruction[] => dockerStages(readFileSync(join(root, 'Dockerfile'), 'utf8')).at(-1)!;
/** A RUN's command, its flags (--mount=...) left out: what /bin/sh -c runs. */
const runCommand = (args: string): string => args.replace(/^(?:--\S+\s+)+/, '');

/** The installed size (du, KiB on disk, as `du -sh` reports it) and the apparent size in bytes. */
function sizeOf(dir: string): { mib: number; bytes: number } {
  const kib = Number(execFileSync('du', ['-sk', dir], { encoding: 'utf8' }).split('\t')[0]);
  const bytes = Number(execFileSync('du', ['-sb', dir], { encoding: 'utf8' }).split('\t')[0]);
  return { mib: kib / 1024, bytes };
}

/**
 * The bounds on the image's install (KiB on disk of npm's global prefix, in MiB). Measured on 2026-12-01: 56 MiB
 * without the history store (vitest and what it brings, vite, rolldown and lightningcss, are 35 of them: the
 * suites run as Vitest test cases), 125 MiB with it (DuckDB's native library is 70). About 15% above each: room
 * for routine upgrades, and a failure when a heavy package joins the runtime (the store's engine by default, or a
 * devDependency such as TypeScript, 27 MiB, or playwright-core, 14 MiB, moved to dependencies).
 */
const SIZE_BOUND_MIB = { lean: 64, history: 144 };

interface Installed {
  prefix: string;
  bin: string;
  size: { mib: number; bytes: number };
  log: string;
}

/** The last stage's RUN instructions, run as written, with the ARGs given (else their defaults). */
function installImage(name: string, args: Record<string, string>): Installed {
  const stage = image();
  const prefix = join(work, `image-${name}`);
  mkdirSync(prefix);
  const env: Record<string, string> = {};
  for (const i of stage.filter((x) => x.keyword === 'ARG')) {
    const [k, v = ''] = i.args.split('=', 2) as [string, string?];
    env[k] = args[k] ?? v;
  }
  // COPY --from=pack /packs/ ${PACKS}/: the first stage's npm pack, here made once by beforeAll
  env.PACKS = join(work, `packs-${name}`);
  mkdirSync(env.PACKS);
  copyFileSync(join(packs, tgz), join(env.PACKS, tgz));
  let log = '';
  for (const i of stage.filter((x) => x.keyword === 'RUN')) {
    const r = spawnSync('/bin/sh', ['-c', runCommand(i.args)], {
      cwd: work,
      env: npmEnv({ ...env, npm_config_prefix: prefix, PATH: `${join(prefix, 'bin')}:${process.env.PATH}` }),
      encoding: 'utf8',
    });
    log += r.stdout + r.stderr;
    expect(r.status, log).toBe(0);
  }
  expect(existsSync(env.PACKS)).toBe(false);
  return { prefix, bin: join(prefix, 'bin', 'mapped-reg-conformance'), size: sizeOf(prefix), log };
}

const ENGINE = '@duckdb/node-api';
const fixtures = (): string[] => ['cuda.json', 'rocm724.json'].map((f) => join(root, 'test', 'fixtures', f));

describe('the container image (Dockerfile), its install made without Docker', () => {
  it('the recipe: Node.js 20 slim at an exact version, run as the node user, the packed tarball installed globally, production dependencies only, no install script, no compiler; the command is the entrypoint', () => {
    const stages = dockerStages(readFileSync(join(root, 'Dockerfile'), 'utf8'));
    // the base image pinned to an exact version, the same in both stages
    expect(stages.map((s) => s[0]!.args)).toEqual([expect.stringMatching(/^node:20\.\d+\.\d+-bookworm-slim AS pack$/), expect.stringMatching(/^node:20\.\d+\.\d+-bookworm-slim$/)]);
    expect(stages[1]![0]!.args).toBe(stages[0]![0]!.args.replace(/ AS pack$/, ''));
    expect(stages[0]!.filter((i) => i.keyword === 'RUN').map((i) => i.args).at(-1)).toBe('npm pack --pack-destination /packs');
    const last = image();
    // not root: the image's node user runs the command
    expect(last.filter((i) => i.keyword === 'USER').map((i) => i.args)).toEqual(['node']);
    const runs = last.filter((i) => i.keyword === 'RUN').map((i) => runCommand(i.args));
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatch(/npm install --global --omit=dev --ignore-scripts .*"\$tarball"/);
    for (const s of stages) for (const i of s) expect(`${i.keyword} ${i.args}`).not.toMatch(/apt-get|apk |gcc|g\+\+|clang|make\b|build-essential|python|node-gyp/);
    expect(last.at(-1)).toEqual({ keyword: 'ENTRYPOINT', args: '["mapped-reg-conformance"]' });
    // the build context: what this checkout built or installed stays out
    const ignored = readFileSync(join(root, '.dockerignore'), 'utf8').split('\n');
    for (const p of ['node_modules', 'dist', '.git', '*.tgz']) expect(ignored).toContain(p);
  });

  it(`the gate's image (no history store): --version, a run with no GPU passes, a history command says in one line how to add DuckDB (exit 2); under ${SIZE_BOUND_MIB.lean} MiB`, () => {
    const lean = installImage('lean', {});
    console.log(`image install without the history store: ${lean.size.mib.toFixed(1)} MiB on disk (du -sk), ${(lean.size.bytes / 1e6).toFixed(1)} MB of files (du -sb)`);
    expect(existsSync(join(lean.prefix, 'lib', 'node_modules', 'mapped-reg-conformance', 'node_modules', '@duckdb'))).toBe(false);
    expect(existsSync(join(lean.prefix, 'lib', 'node_modules', '@duckdb'))).toBe(false);
    // the RUN's own check (mapped-reg-conformance --version) printed the version
    expect(lean.log).toContain(`${pkg.version}\n`);

    const cwd = mkdtempSync(join(work, 'run-'));
    const env = cleanEnv();
    const version = spawnSync(lean.bin, ['--version'], { cwd, env, encoding: 'utf8' });
    expect(version.stdout).toBe(`${pkg.version}\n`);
    const r = spawnSync(lean.bin, ['--size', '8', '--json', 'r.json'], { cwd, env, encoding: 'utf8' });
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/no GPU driver was found/);
    expect(r.stdout).toMatch(/^PASS: /m);

    const line = `mapped-reg-conformance: history needs the DuckDB engine (${ENGINE}), an optional dependency that this install does not have: npm install ${ENGINE}@${pkg.peerDependencies[ENGINE]} where mapped-reg-conformance is installed (npm install -g for a global install)\n`;
    for (const args of [
      ['history', 'add', '--db', 'fleet.db', ...fixtures()],
      ['history', 'compare', '--db', 'fleet.db', '--old', 'driver=*', '--new', 'driver=*'],
      ['history', 'report', '--db', 'fleet.db', '--html', 'fleet.html'],
    ]) {
      const h = spawnSync(lean.bin, args, { cwd, env, encoding: 'utf8' });
      expect(h.status, args.join(' ')).toBe(2);
      expect(h.stderr).toBe(line);
      expect(h.stdout).toBe('');
    }
    expect(readdirSync(cwd).sort()).toEqual(['r.json']);
    expect(lean.size.mib).toBeLessThan(SIZE_BOUND_MIB.lean);
  }, 300_000);

  it(`WITH_HISTORY=1: the pinned DuckDB beside it, and history add works; under ${SIZE_BOUND_MIB.history} MiB`, () => {
    const full = installImage('history', { WITH_HISTORY: '1' });
    console.log(`image install with the history store: ${full.size.mib.toFixed(1)} MiB on disk (du -sk), ${(full.size.bytes / 1e6).toFixed(1)} MB of files (du -sb)`);
    const installed = JSON.parse(readFileSync(join(full.prefix, 'lib', 'node_modules', '@duckdb', 'node-api', 'package.json'), 'utf8')) as { version: string };
    expect(installed.version).toBe(pkg.peerDependencies[ENGINE]);
    const cwd = mkdtempSync(join(work, 'run-'));
    const h = spawnSync(full.bin, ['history', 'add', '--db', 'fleet.db', ...fixtures()], { cwd, env: cleanEnv(), encoding: 'utf8' });
    expect(h.status, h.stderr).toBe(0);
    expect(h.stdout).toMatch(/^added 2 runs \(2 devices, /);
    expect(full.size.mib).toBeLessThan(SIZE_BOUND_MIB.history);
  }, 300_000);
});
