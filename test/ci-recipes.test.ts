// docs/ci.md's shell steps, run as written: the GitLab job's script (in the image: the command installed from the
// packed tarball as the Dockerfile installs it), the same job on a shell executor (npx of the packed tarball), and
// the Jenkinsfile's sh step (its Groovy string as Groovy makes it). Each runs in a fresh clone of this repository,
// with the expectations file the page shows, against the driver double: first with no baseline, then with the
// first run's results as the pinned baseline, fetched the way each recipe fetches it (GitLab: its API, served
// here by a local server that checks the job token; Jenkins: where copyArtifacts puts it).
import { execFileSync, spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { RunResult } from '../results/types.js';
import { buildDoubles } from './double/build.js';
import { ROOT, cleanEnv } from './support/command.js';

const work = mkdtempSync(join(tmpdir(), 'mapped-reg-recipes-'));
afterAll(() => rmSync(work, { recursive: true, force: true, maxRetries: 5 }), 120_000);

const text = readFileSync(join(ROOT, 'docs', 'ci.md'), 'utf8');
const blocks = [...text.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map((m) => m[2]!);
const block = (firstLine: string): string => {
  const found = blocks.filter((b) => b.split('\n')[0] === firstLine);
  expect(found, firstLine).toHaveLength(1);
  return found[0]!;
};

interface GitlabJob {
  script: string[];
  variables?: Record<string, string | { value: string; expand?: boolean }>;
}
const gitlabJob = (firstLine: string): GitlabJob => (parse(block(firstLine)) as Record<string, GitlabJob>)['gpu-gate']!;
const gitlabScript = (firstLine: string): string => gitlabJob(firstLine).script.join('\n');
/** The job's variables as the runner exports them (one of `value:` and `expand: false` taken as written). */
const gitlabVariables = (firstLine: string): Record<string, string> =>
  Object.fromEntries(Object.entries(gitlabJob(firstLine).variables ?? {}).map(([k, v]) => [k, typeof v === 'string' ? v : v.value]));

/** The Jenkinsfile's `sh """..."""` as Groovy makes it: `\\` is one backslash, `${baseline}` the script's variable. */
function jenkinsScript(baseline: string): string {
  const m = /sh """\n([\s\S]*?)\n\s*"""/.exec(block('// Jenkinsfile'));
  expect(m).not.toBeNull();
  const groovy = m![1]!;
  expect(new Set(groovy.match(/\$\{(\w+)\}/g))).toEqual(new Set(['${baseline}']));
  return groovy.replace(/\\\\/g, '\\').replaceAll('${baseline}', baseline);
}

const RATES = 'registered=2,pinned=1.5,pageable=0.5';
let tgz: string;
let imageBin: string;
let cuda: string;

beforeAll(() => {
  cuda = buildDoubles().cuda;
  const packs = join(work, 'packs');
  mkdirSync(packs);
  // the tree the global setup built: `prepare` is not run again (dist/ is not rebuilt while other files run it)
  execFileSync('npm', ['pack', '--ignore-scripts', '--pack-destination', packs], { cwd: ROOT, stdio: 'ignore', env: npmEnv() });
  tgz = join(packs, readdirSync(packs)[0]!);
  // the image's install, as the Dockerfile's last RUN makes it
  const prefix = join(work, 'image');
  execFileSync('npm', ['install', '--global', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund', '--no-update-notifier', tgz], { stdio: 'ignore', env: npmEnv({ npm_config_prefix: prefix }) });
  imageBin = join(prefix, 'bin');
  expect(existsSync(join(imageBin, 'mapped-reg-conformance'))).toBe(true);
}, 300_000);

/** The tests' environment without npm's own variables (npm test sets npm_*: a CI job's shell has none). */
function npmEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env = cleanEnv(extra);
  for (const k of Object.keys(env)) if (k.startsWith('npm_') && !(k in extra)) delete env[k];
  return env;
}

let serial = 0;
/** A fresh clone of this repository (the CI's checkout), with the page's expectations file in ci/. */
function freshClone(): string {
  const dir = join(work, `clone-${serial++}`);
  execFileSync('git', ['clone', '--quiet', '--no-hardlinks', ROOT, dir], { stdio: 'ignore' });
  mkdirSync(join(dir, 'ci'), { recursive: true });
  writeFileSync(join(dir, 'ci', 'expectations.txt'), block('# ci/expectations.txt: known failures and flakes of our GPU machines'));
  return dir;
}

/** A script run as the CI runs it (bash, stopping at the first error), in `cwd`; resolves with its exit status and output. */
function runScript(script: string, cwd: string, env: Record<string, string | undefined>): Promise<{ code: number | null; log: string }> {
  return new Promise((done) => {
    const child = spawn('bash', ['--noprofile', '--norc', '-eo', 'pipefail', '-c', script], { cwd, env: npmEnv({ MAPPED_REG_CUDA_LIBRARY: cuda, MAPPED_REG_DOUBLE_RATES: RATES, ...env }) });
    let log = '';
    child.stdout.on('data', (d: Buffer) => (log += d.toString()));
    child.stderr.on('data', (d: Buffer) => (log += d.toString()));
    child.on('close', (code) => done({ code, log }));
  });
}

const results = (dir: string): RunResult => JSON.parse(readFileSync(join(dir, 'mapped-reg-results.json'), 'utf8')) as RunResult;

/** The first run passed on the double: cuda:0 Usable, its reports written, no baseline. */
function expectFirstRun(dir: string, r: { code: number | null; log: string }): RunResult {
  expect(r.code, r.log).toBe(0);
  expect(r.log).toMatch(/^PASS: /m);
  const res = results(dir);
  expect(res.devices.find((d) => d.id === 'cuda:0')!.verdict.kind).toBe('Usable');
  expect(res.gate!.pass).toBe(true);
  expect(res.gate!.baseline).toBeUndefined();
  expect(res.gate!.expectations).toMatch(/ci\/expectations\.txt$/);
  expect(readFileSync(join(dir, 'mapped-reg-junit.xml'), 'utf8')).toMatch(/<testsuite name="cuda:0 [^"]*\[Usable\] on [^"]+"/);
  return res;
}

/** GitLab's API for a job's artifact, as much of it as the recipe uses: the job token is required. */
let server: Server;
let api: string;
const served = new Map<string, string>();
const TOKEN = 'job-token-1234';
beforeAll(async () => {
  server = createServer((req, res) => {
    const body = served.get(req.url ?? '');
    if (req.headers['job-token'] !== TOKEN) res.writeHead(401).end('401 Unauthorized');
    else if (body === undefined) res.writeHead(404).end('404 Not Found');
    else res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(body);
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  api = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v4`;
});
afterAll(() => new Promise<void>((ok) => server.close(() => ok())));

const gitlabEnv = (): Record<string, string> => ({ CI_API_V4_URL: api, CI_PROJECT_ID: '7', CI_JOB_TOKEN: TOKEN });

describe.each([
  { name: 'GitLab CI, Docker executor (the image: the tarball installed as the Dockerfile does)', firstLine: '# .gitlab-ci.yml', image: true },
  { name: 'GitLab CI, shell executor (npx of the packed tarball)', firstLine: '# .gitlab-ci.yml, shell executor: Node.js 20 on the machine, the command from its packed tarball', image: false },
])('$name', ({ firstLine, image }) => {
  const env = (): Record<string, string | undefined> => ({
    ...gitlabEnv(),
    ...gitlabVariables(firstLine),
    // the image has the command on its PATH; the shell executor's job names the tarball (here: the one packed above)
    ...(image ? { PATH: `${imageBin}:${process.env.PATH}` } : { MAPPED_REG_TARBALL: tgz }),
  });

  it('runs as written: with no pinned job, then with the first run pinned (its results fetched through the API with the job token)', async () => {
    const script = gitlabScript(firstLine);
    if (!image) expect((parse(block(firstLine)) as Record<string, GitlabJob>)['gpu-gate']!.variables!.MAPPED_REG_TARBALL).toMatch(/\.tgz$/);
    const first = freshClone();
    const firstRun = await runScript(script, first, env());
    const before = expectFirstRun(first, firstRun);
    expect(firstRun.log).toMatch(/^no pinned baseline \(ci\/baseline-job-id is absent or empty\): the gate judges this run on its own$/m);
    served.set(`/api/v4/projects/7/jobs/${serial}/artifacts/mapped-reg-results.json`, readFileSync(join(first, 'mapped-reg-results.json'), 'utf8'));
    const second = freshClone();
    writeFileSync(join(second, 'ci', 'baseline-job-id'), `${serial - 1}\n`);
    const r = await runScript(script, second, env());
    expect(r.code, r.log).toBe(0);
    expect(JSON.parse(readFileSync(join(second, 'baseline.json'), 'utf8')).startedAt).toBe(before.startedAt);
    expect(results(second).gate!.baseline).toMatch(/baseline\.json$/);
    expect(r.log).toMatch(/^PASS: /m);
  }, 300_000);

  // docs/ci.md: exit 1 is the gate's answer (don't retry); a baseline that cannot be had is bad input, exit 2
  it('a pinned job whose artifact is gone (404) stops the job before the gate: one line saying what to do, exit 2, no stack trace, no results', async () => {
    const dir = freshClone();
    writeFileSync(join(dir, 'ci', 'baseline-job-id'), '999999\n');
    const r = await runScript(gitlabScript(firstLine), dir, env());
    expect(r.code, r.log).toBe(2);
    expect(r.log.trimEnd().split('\n')).toEqual([
      "baseline: the pinned job 999999's mapped-reg-results.json: 404 Not Found: its artifacts expired, or ci/baseline-job-id names another job; pin a kept job, or empty the file to run without a baseline",
    ]);
    expect(existsSync(join(dir, 'mapped-reg-results.json'))).toBe(false);
  }, 120_000);

  it('an API that cannot be reached: one line with the reason, exit 2', async () => {
    const dir = freshClone();
    writeFileSync(join(dir, 'ci', 'baseline-job-id'), '5\n');
    // a port nothing listens on: one the system gave and took back
    const closed = createServer();
    await new Promise<void>((ok) => closed.listen(0, '127.0.0.1', ok));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((ok) => closed.close(() => ok()));
    const r = await runScript(gitlabScript(firstLine), dir, { ...env(), CI_API_V4_URL: `http://127.0.0.1:${port}/api/v4` });
    expect(r.code, r.log).toBe(2);
    expect(r.log.trimEnd().split('\n')).toEqual(["baseline: the pinned job 5's mapped-reg-results.json: the API could not be reached (ECONNREFUSED); try the job again once it can"]);
  }, 120_000);
});

describe('Jenkins (the docker agent runs the image)', () => {
  it('the sh step runs as written: with no pinned build, then with the pinned build\'s results where copyArtifacts puts them', async () => {
    const env = { PATH: `${imageBin}:${process.env.PATH}` };
    const first = freshClone();
    const firstRun = await runScript(jenkinsScript(''), first, env);
    const before = expectFirstRun(first, firstRun);
    expect(firstRun.log).toMatch(/^no pinned baseline \(ci\/baseline-build is absent or empty\): the gate judges this run on its own$/m);
    const second = freshClone();
    mkdirSync(join(second, 'baseline'));
    writeFileSync(join(second, 'baseline', 'mapped-reg-results.json'), JSON.stringify(before));
    const r = await runScript(jenkinsScript('--baseline baseline/mapped-reg-results.json'), second, env);
    expect(r.code, r.log).toBe(0);
    expect(results(second).gate!.baseline).toMatch(/baseline\/mapped-reg-results\.json$/);
  }, 300_000);

  it('a pinned build without the results (copyArtifacts, optional, found none): one line saying what to do, exit 2, no results', async () => {
    const env = { PATH: `${imageBin}:${process.env.PATH}` };
    const dir = freshClone();
    const r = await runScript(jenkinsScript('--baseline baseline/mapped-reg-results.json'), dir, env);
    expect(r.code, r.log).toBe(2);
    expect(r.log.trimEnd().split('\n')).toEqual([
      'baseline: the pinned build (ci/baseline-build) has no mapped-reg-results.json: it expired or is not a build of main; pin a kept build, or empty the file to run without a baseline',
    ]);
    expect(existsSync(join(dir, 'mapped-reg-results.json'))).toBe(false);
  }, 300_000);
});

describe('an absent or empty JUnit report fails the job (a test report view would show 0 tests, green)', () => {
  const SHELL = '# .gitlab-ci.yml, shell executor: Node.js 20 on the machine, the command from its packed tarball';
  /** The lines of each recipe that look at the report after the command (GitLab: the script's last entry; Jenkins: the sh step's). */
  const checks: [string, () => string][] = [
    ['GitLab CI, Docker executor', () => gitlabJob('# .gitlab-ci.yml').script.at(-1)!],
    ['GitLab CI, shell executor', () => gitlabJob(SHELL).script.at(-1)!],
    ['Jenkins', () => jenkinsScript('').split('\n').filter((l) => l.includes("grep -qs '<testsuite '")).join('\n')],
  ];
  it.each(checks)('%s: no file, an empty file and a report of no testsuite fail (exit 1, one line); a report passes', async (_name, script) => {
    const check = script();
    expect(check).toContain('mapped-reg-junit.xml');
    const dir = mkdtempSync(join(work, 'report-'));
    const report = join(dir, 'mapped-reg-junit.xml');
    const bad = [undefined, '', '<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="x" tests="0" failures="0" errors="0" time="0"/>\n'];
    for (const content of bad) {
      if (content !== undefined) writeFileSync(report, content);
      const r = await runScript(check, dir, {});
      expect(r.code, `${JSON.stringify(content)}: ${r.log}`).toBe(1);
      expect(r.log).toMatch(/^mapped-reg-junit\.xml: no JUnit report \(absent or empty\): the (job|build) fails\n$/);
    }
    writeFileSync(report, '<?xml version="1.0" encoding="UTF-8"?>\n<testsuites tests="0" failures="0" errors="0" time="0">\n  <testsuite name="gate [PASS] on h" tests="0" failures="0" errors="0" skipped="0" time="0"/>\n</testsuites>\n');
    const ok = await runScript(check, dir, {});
    expect(ok.code, ok.log).toBe(0);
  });
});
