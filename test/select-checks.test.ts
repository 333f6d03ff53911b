// Check selection: --check / --skip globs, the skips file, list --checks, and the catalog they are
// matched against: the selection's rules as a function, then through the real command on the CUDA driver double
// (JSON, JUnit, terminal, step summary).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UsageError } from '../cli/options.js';
import { readSkipsFile, selectChecks } from '../cli/select-checks.js';
import type { CheckResult, RunResult } from '../results/types.js';
import { type CatalogEntry, checkCatalog } from '../suites/catalog.js';
import { buildDoubles } from './double/build.js';
import { MAIN, cleanEnv } from './support/command.js';
import { validateJunit } from './support/junit-xsd.js';

const work = mkdtempSync(join(tmpdir(), 'mapped-reg-select-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
let catalog: CatalogEntry[];
let doubles: { cuda: string; hip: string };
beforeAll(async () => {
  catalog = await checkCatalog();
  doubles = buildDoubles();
});

const ids = (): string[] => catalog.map((c) => c.id);
const file = (name: string, text: string): string => {
  const path = join(work, name);
  writeFileSync(path, text);
  return path;
};

describe('the catalog', () => {
  it('lists every check of the suites once, in the order of a run: static, probe, timing, the hazards, context_reset then truncate_contained last', () => {
    expect(ids()).toHaveLength(33);
    expect(new Set(ids()).size).toBe(33);
    expect(ids().slice(0, 5)).toEqual(['static.verdict', 'probe.verdict', 'probe.release', 'timing.margin', 'timing.link']);
    expect(ids().slice(-2)).toEqual(['hazard.context_reset', 'hazard.truncate_contained']);
    for (const c of catalog) expect(c.title.length, c.id).toBeGreaterThan(10);
    // what needs the self-test's report says so; nothing else needs anything
    expect(catalog.filter((c) => c.needs.length > 0).map((c) => [c.id, c.needs])).toEqual([
      ['probe.release', ['probe.verdict']],
      ['timing.margin', ['probe.verdict']],
      ['timing.link', ['probe.verdict']],
    ]);
  });
});

describe('selectChecks: the rules', () => {
  const select = (checks: string[], skips: string[] = []) => selectChecks(catalog, { checks, skips: skips.map((glob) => ({ glob, source: '--skip' })) });

  it('no selection: every check runs', () => {
    expect(select([])).toEqual({});
  });

  it('--check GLOB: the checks it matches run, every other one is skipped, "not selected by --check GLOB"', () => {
    const out = select(['hazard.*']);
    expect(Object.keys(out)).toEqual(['static.verdict', 'probe.verdict', 'probe.release', 'timing.margin', 'timing.link']);
    expect(out['static.verdict']).toBe('not selected by --check hazard.*');
  });

  it('several --check globs (and ?) add up; the reason names every one', () => {
    const out = select(['static.*', 'hazard.unregister_?nknown']);
    const run = ids().filter((id) => out[id] === undefined);
    expect(run).toEqual(['static.verdict', 'hazard.unregister_unknown']);
    expect(out['hazard.context_reset']).toBe('not selected by --check static.*, --check hazard.unregister_?nknown');
  });

  it('a glob matches the whole id: probe matches nothing, probe* both probe checks', () => {
    expect(() => select(['probe'])).toThrow(UsageError);
    expect(ids().filter((id) => select(['probe*'])[id] === undefined)).toEqual(['probe.verdict', 'probe.release']);
  });

  it('--check of a check that needs probe.verdict brings probe.verdict with it', () => {
    const out = select(['timing.margin']);
    expect(ids().filter((id) => out[id] === undefined)).toEqual(['probe.verdict', 'timing.margin']);
  });

  it('--skip GLOB: "skipped by --skip GLOB", and the checks that need it go with it, saying why; --skip wins over --check', () => {
    const out = select([], ['probe.verdict']);
    expect(out).toEqual({
      'probe.verdict': 'skipped by --skip probe.verdict',
      'probe.release': 'skipped by --skip probe.verdict (it needs probe.verdict)',
      'timing.margin': 'skipped by --skip probe.verdict (it needs probe.verdict)',
      'timing.link': 'skipped by --skip probe.verdict (it needs probe.verdict)',
    });
    expect(select(['timing.*'], ['probe.*'])).toMatchObject({ 'probe.verdict': 'skipped by --skip probe.*', 'timing.margin': 'skipped by --skip probe.* (it needs probe.verdict)' });
    // a check matched itself is skipped for its own glob, not for what it needs
    expect(select([], ['probe.verdict', 'timing.link'])['timing.link']).toBe('skipped by --skip timing.link');
  });

  it('the first rule that matches names the reason', () => {
    const out = selectChecks(catalog, { checks: [], skips: [{ glob: 'hazard.context_*', source: '--skip' }, { glob: 'hazard.*', source: 'skips.txt:3' }] });
    expect(out['hazard.context_reset']).toBe('skipped by --skip hazard.context_*');
    expect(out['hazard.tmpfs_bytes']).toBe('skipped by skips.txt:3 hazard.*');
  });

  it('a glob that matches no check is bad input, named with where it was given', () => {
    expect(() => select(['hazard.nope'])).toThrow(/^--check hazard\.nope matches no check/);
    expect(() => select([], ['nope*'])).toThrow(/^--skip nope\* matches no check/);
    expect(() => selectChecks(catalog, { checks: [], skips: [{ glob: 'nope', source: 'f.txt:7' }] })).toThrow(/^f\.txt:7: nope matches no check/);
  });
});

describe('readSkipsFile', () => {
  it('one glob a line; # comments, whole lines or after a glob, and blank lines are ignored; each rule knows its line', async () => {
    const f = file('skips.txt', '# known to hang\n\n  hazard.context_reset   # resets the context\n\t\nhazard.truncate_*\r\n#hazard.tmpfs_bytes\n');
    expect(await readSkipsFile(f)).toEqual([
      { glob: 'hazard.context_reset', source: `${f}:3` },
      { glob: 'hazard.truncate_*', source: `${f}:5` },
    ]);
    expect(await readSkipsFile(file('empty.txt', '# nothing\n\n'))).toEqual([]);
  });

  it('a file that cannot be read, or a line of two words, is bad input', async () => {
    await expect(readSkipsFile(join(work, 'missing.txt'))).rejects.toThrow(/^--skips-file .*missing\.txt: cannot be read \(ENOENT\)$/);
    await expect(readSkipsFile(work)).rejects.toThrow(/cannot be read \(EISDIR\)/);
    const two = file('two.txt', 'hazard.context_reset\nfail hazard.tmpfs_bytes\n');
    await expect(readSkipsFile(two)).rejects.toThrow(new RegExp(`^${two}:2: one glob a line`));
  });
});

// ---- through the command ----

function cli(args: string[], env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, [MAIN, ...args], { env: cleanEnv(env), encoding: 'utf8', cwd: work });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}
const cuda = (): Record<string, string> => ({ MAPPED_REG_CUDA_LIBRARY: doubles.cuda });
const readJson = (f: string): RunResult => JSON.parse(readFileSync(f, 'utf8')) as RunResult;
const check = (r: RunResult, id: string): CheckResult => r.devices[0]!.checks.find((c) => c.id === id)!;

describe('list --checks', () => {
  it('prints every check id of the catalog with its title, one a line', () => {
    const r = cli(['list', '--checks']);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines.map((l) => l.split(/\s+/)[0])).toEqual(ids());
    for (const [i, c] of catalog.entries()) expect(lines[i]).toContain(c.title);
    expect(lines[2]).toMatch(/^probe\.release +both windows released at the first try \(needs probe\.verdict\)$/);
  });

  it('--json: the catalog as JSON on standard output (with --json -, or to a file named)', () => {
    for (const args of [['list', '--checks', '--json'], ['list', '--json', '-', '--checks']]) {
      const r = cli(args);
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toEqual({ checks: catalog });
    }
    const out = join(work, 'checks.json');
    expect(cli(['list', '--checks', '--json', out]).code).toBe(0);
    expect(JSON.parse(readFileSync(out, 'utf8'))).toEqual({ checks: catalog });
  });

  it('list without --checks still needs a file name after --json', () => {
    const r = cli(['list', '--backend', 'cpu', '--json']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^mapped-reg-conformance: .*json/);
  });
});

describe('a run on the CUDA double', () => {
  it('the catalog is what a run reports: every check, in order, with its suite and title', () => {
    const json = join(work, 'all.json');
    const r = cli(['--backend', 'cuda', '--size', '8', '--scratch-dir', mkdtempSync(join(work, 'scratch-')), '--json', json], cuda());
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(readJson(json).devices[0]!.checks.map(({ id, suite, title }) => ({ id, suite, title }))).toEqual(catalog.map(({ id, suite, title }) => ({ id, suite, title })));
  });

  it('--skip and a skips file: each check skipped with its reason in JSON, JUnit, the terminal and the step summary; the device is Inconclusive (not probed), never Usable', () => {
    const json = join(work, 'skipped.json');
    const junit = join(work, 'skipped.xml');
    const summary = file('summary.md', '');
    const skips = file('hang.txt', '# known to hang\n\nhazard.context_reset  # resets the context\nhazard.truncate_*\n');
    const r = cli(['--backend', 'cuda', '--size', '8', '--scratch-dir', mkdtempSync(join(work, 'scratch-')), '--skip', 'probe.verdict', '--skips-file', skips, '--json', json, '--junit', junit], { ...cuda(), GITHUB_STEP_SUMMARY: summary });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const result = readJson(json);
    const d = result.devices[0]!;
    expect(result.options).toMatchObject({ skips: ['probe.verdict'], skipsFile: skips });
    expect(check(result, 'probe.verdict')).toMatchObject({ status: 'skip', message: 'skipped by --skip probe.verdict' });
    for (const id of ['probe.release', 'timing.margin', 'timing.link']) expect(check(result, id), id).toMatchObject({ status: 'skip', message: 'skipped by --skip probe.verdict (it needs probe.verdict)' });
    expect(check(result, 'hazard.context_reset')).toMatchObject({ status: 'skip', message: `skipped by ${skips}:3 hazard.context_reset` });
    expect(check(result, 'hazard.truncate_contained')).toMatchObject({ status: 'skip', message: `skipped by ${skips}:4 hazard.truncate_*` });
    // the others ran (hazard.every_gpu_at_once is skipped too: one device)
    expect(d.checks.filter((c) => c.status === 'pass')).toHaveLength(26);
    expect(d.verdict).toMatchObject({ kind: 'Inconclusive', text: 'Inconclusive (not probed: probe.verdict skipped by --skip probe.verdict)' });
    expect(d.cacheable).toBe(false);
    expect(d.timing).toBeUndefined();
    // JUnit: <skipped message="...">, valid against the schema
    const xml = readFileSync(junit, 'utf8');
    expect(validateJunit(xml).ok).toBe(true);
    expect(xml).toMatch(/<testcase classname="cuda:0\.probe" name="cuda:0 &gt; probe\.verdict"[^>]*>\s*<skipped message="skipped by --skip probe\.verdict"\/>/);
    expect(xml).toMatch(/<testcase classname="cuda:0\.timing" name="cuda:0 &gt; timing\.link"[^>]*>\s*<skipped message="skipped by --skip probe\.verdict \(it needs probe\.verdict\)"\/>/);
    expect(xml).toContain(`<skipped message="skipped by ${skips}:3 hazard.context_reset"/>`);
    // the terminal, and the step summary
    expect(r.stdout).toMatch(/cuda:0 probe\.verdict skip - skipped by --skip probe\.verdict/);
    expect(r.stdout).toMatch(/^skip: probe\.release, timing\.margin, timing\.link: skipped by --skip probe\.verdict \(it needs probe\.verdict\)$/m);
    expect(r.stdout).toMatch(/^cuda:0: Inconclusive: not probed: probe\.verdict skipped by --skip probe\.verdict$/m);
    const md = readFileSync(summary, 'utf8');
    expect(md).toContain('#### Checks skipped by the selection (6)');
    expect(md).toMatch(/^- \*\*hazard\.context\\_reset\*\*: skipped by .*hang\.txt:3 hazard\.context\\_reset$/m);
  });

  it('--check (repeated): what the globs match runs, with probe.verdict for the timing; the rest is "not selected"', () => {
    const json = join(work, 'checked.json');
    const r = cli(['--backend', 'cuda', '--size', '8', '--scratch-dir', mkdtempSync(join(work, 'scratch-')), '--check', 'timing.margin', '--check', 'hazard.unregister_*', '--json', json], cuda());
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const result = readJson(json);
    const ran = result.devices[0]!.checks.filter((c) => c.status !== 'skip').map((c) => c.id);
    expect(ran).toEqual(['probe.verdict', 'timing.margin', 'hazard.unregister_after_register', 'hazard.unregister_unknown', 'hazard.unregister_interior', 'hazard.unregister_null_refused']);
    expect(check(result, 'static.verdict').message).toBe('not selected by --check timing.margin, --check hazard.unregister_*');
    // the self-test ran: the verdict stands
    expect(result.devices[0]!.verdict.kind).toBe('Usable');
    expect(result.options).toMatchObject({ checks: ['timing.margin', 'hazard.unregister_*'] });
  });

  it('a glob that matches no check, a skips file that is missing or holds an unknown glob: exit 2, one line, nothing run or written', () => {
    const json = join(work, 'never.json');
    const missing = join(work, 'no-such-skips.txt');
    const stale = file('stale.txt', '# an old name\nhazard.renamed_check\n');
    for (const [args, said] of [
      [['--check', 'hazard.*', '--check', 'nope.*'], /^mapped-reg-conformance: --check nope\.\* matches no check \(the check ids: mapped-reg-conformance list --checks\)$/],
      [['--skip', 'probe'], /^mapped-reg-conformance: --skip probe matches no check/],
      [['--skips-file', missing], /^mapped-reg-conformance: --skips-file .*no-such-skips\.txt: cannot be read \(ENOENT\)$/],
      [['--skips-file', stale], /^mapped-reg-conformance: .*stale\.txt:2: hazard\.renamed_check matches no check/],
    ] as const) {
      const r = cli(['--backend', 'cuda', '--size', '8', ...args, '--json', json], cuda());
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr.trimEnd().split('\n')).toEqual([expect.stringMatching(said)]);
      expect(r.stdout).toBe('');
      expect(existsSync(json)).toBe(false);
    }
  });
});
