// docs/ci.md's recipes, and the Kubernetes Jobs of docs/fleet.md: each YAML parses, and what each recipe says agrees
// with the action (its inputs, outputs and file names), the command (its options, by its own --help) and the
// expectations file's format (by the gate's own parser).
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseDocument } from 'yaml';
import { parseExpectations } from '../results/expectations.js';
import { MAIN, ROOT, cleanEnv } from './support/command.js';

interface Block {
  lang: string;
  text: string;
}

const blocksOf = (file: string): Block[] => [...readFileSync(join(ROOT, file), 'utf8').matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map((m) => ({ lang: m[1]!, text: m[2]! }));
const ci = blocksOf('docs/ci.md');
/** The recipe whose first line names `file`. */
const recipe = (file: string): string => {
  const found = ci.filter((b) => b.text.split('\n')[0]!.replace(/^(#|\/\/)\s*/, '') === file);
  expect(found, file).toHaveLength(1);
  return found[0]!.text;
};

/** The YAML of `text`, parsed strictly: any error or warning fails. */
function yaml(text: string, what: string): Record<string, unknown> {
  const doc = parseDocument(text, { strict: true, uniqueKeys: true });
  expect(doc.errors.map(String), what).toEqual([]);
  expect(doc.warnings.map(String), what).toEqual([]);
  return doc.toJS() as Record<string, unknown>;
}

/** The options of the command (run and list), from its own --help. */
const OPTIONS = new Set(spawnSync(process.execPath, [MAIN, '--help'], { env: cleanEnv(), encoding: 'utf8' }).stdout.match(/--[a-z][a-z-]*/g));

/** Each invocation of the command in a shell text (continuation lines joined): its arguments. */
function invocations(text: string): string[][] {
  return text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .filter((l) => /(^|\s)mapped-reg-conformance\s/.test(l) && !/^\s*(#|\/\/)/.test(l))
    .map((l) => l.slice(l.search(/mapped-reg-conformance\s/) + 'mapped-reg-conformance'.length).trim().split(/\s+/));
}
/** The value given to an option in an invocation. */
const valueOf = (args: string[], option: string): string | undefined => args[args.indexOf(option) + 1];

function checkInvocations(text: string, what: string): string[][] {
  const calls = invocations(text);
  expect(calls.length, what).toBeGreaterThan(0);
  for (const args of calls) for (const a of args.filter((x) => /^--[a-z]/.test(x))) expect(OPTIONS, `${what}: ${a}`).toContain(a);
  return calls;
}

const action = yaml(readFileSync(join(ROOT, 'action.yml'), 'utf8'), 'action.yml') as { inputs: Record<string, { default?: string }>; outputs: Record<string, unknown> };

describe('docs/ci.md', () => {
  it('the exit statuses, as the command documents them', () => {
    const text = readFileSync(join(ROOT, 'docs/ci.md'), 'utf8');
    for (const row of [/^\| 0 \| the gate passed/m, /^\| 1 \| the gate failed/m, /^\| 2 \| bad usage or bad input/m, /^\| 130, 143, 129 \| stopped by SIGINT, SIGTERM, SIGHUP/m]) expect(text).toMatch(row);
    const help = spawnSync(process.execPath, [MAIN, '--help'], { env: cleanEnv(), encoding: 'utf8' }).stdout.replace(/\s+/g, ' ');
    expect(help).toMatch(/Exit status: 0 the gate passed; 1 the gate failed .* 2 bad usage or bad input.* 130, 143, 129 stopped by SIGINT, SIGTERM, SIGHUP/);
  });

  it('the expectations file shown parses as the gate parses it', () => {
    const block = ci.find((b) => b.text.startsWith('# ci/expectations.txt'))!;
    const e = parseExpectations(block.text, 'ci/expectations.txt');
    expect(e.entries.map((x) => `${x.kind} ${x.check}`)).toEqual(['fail hazard.tmpfs_bytes', 'flake timing.margin']);
  });

  it('GitHub Actions: the workflow parses; the action step uses only the action\'s inputs and outputs; the pinned baseline is the artifact the job uploads', () => {
    const wf = yaml(recipe('.github/workflows/gpu-gate.yml'), 'GitHub workflow') as {
      permissions: Record<string, string>;
      jobs: { gate: { 'runs-on': string[]; steps: { id?: string; uses?: string; with?: Record<string, string>; run?: string; if?: string }[] } };
    };
    expect(wf.permissions.actions).toBe('read');
    expect(wf.jobs.gate['runs-on']).toContain('self-hosted');
    const steps = wf.jobs.gate.steps;
    const gate = steps.find((s) => /\/mapped-reg-conformance@/.test(s.uses ?? ''))!;
    expect(gate.id).toBe('gate');
    for (const k of Object.keys(gate.with!)) expect(Object.keys(action.inputs), k).toContain(k);
    const text = readFileSync(join(ROOT, 'docs/ci.md'), 'utf8');
    for (const [, out] of text.matchAll(/steps\.gate\.outputs\.([\w-]+)/g)) expect(Object.keys(action.outputs)).toContain(out);
    // what the action writes (its default file names) is what the job uploads and what the next run downloads
    const upload = steps.find((s) => s.uses?.startsWith('actions/upload-artifact@'))!;
    const download = steps.find((s) => s.uses?.startsWith('actions/download-artifact@'))!;
    expect(upload.if).toBe('always()');
    expect(upload.with!.path!.trim().split('\n')).toEqual([action.inputs.results!.default, action.inputs.junit!.default]);
    expect(download.with!.name).toBe(upload.with!.name);
    expect(gate.with!.baseline).toContain(`'${download.with!.path}/${action.inputs.results!.default}'`);
    expect(download.with!['run-id']).toBe('${{ steps.pin.outputs.run-id }}');
    expect(steps.find((s) => s.id === 'pin')!.run).toContain('ci/baseline-run-id');
    expect(gate.with!.expectations).toBe('ci/expectations.txt');
  });

  it('GitLab CI: the file parses; the JUnit report the command writes is artifacts:reports:junit, kept when the gate fails; the options are the command\'s', () => {
    const gl = yaml(recipe('.gitlab-ci.yml'), 'GitLab CI') as Record<string, { image?: { name: string; entrypoint: string[] }; script?: string[]; tags?: string[]; artifacts?: { when: string; paths: string[]; reports: { junit: string } } }>;
    const job = gl['gpu-gate']!;
    expect(job.tags).toEqual(['gpu-h200']);
    expect(job.image!.entrypoint).toEqual(['']);
    const [args] = checkInvocations(job.script!.join('\n'), 'GitLab');
    expect(job.artifacts!.when).toBe('always');
    expect(job.artifacts!.reports.junit).toBe(valueOf(args!, '--junit'));
    expect(job.artifacts!.paths).toEqual([valueOf(args!, '--json'), valueOf(args!, '--junit')]);
    expect(valueOf(args!, '--expectations')).toBe('ci/expectations.txt');
    expect(job.script!.join('\n')).toContain('jobs/$job/artifacts/mapped-reg-results.json');
    expect(valueOf(args!, '--json')).toBe('mapped-reg-results.json');
  });

  it('Jenkins: the junit step records the report the command writes; the results are archived; the options are the command\'s', () => {
    const text = recipe('Jenkinsfile');
    const [args] = checkInvocations(text, 'Jenkinsfile');
    expect(text).toContain(`junit testResults: '${valueOf(args!, '--junit')}'`);
    expect(text).toMatch(new RegExp(`archiveArtifacts artifacts: '${valueOf(args!, '--json')}, ${valueOf(args!, '--junit')}'`));
    expect(text).toContain(`filter: '${valueOf(args!, '--json')}'`);
    expect(text).toMatch(/post \{\s*always \{/);
    expect(valueOf(args!, '--expectations')).toBe('ci/expectations.txt');
    // braces balance: a recipe cut short would not
    expect((text.match(/\{/g) ?? []).length).toBe((text.match(/\}/g) ?? []).length);
  });
});

describe('docs/fleet.md', () => {
  const yamls = blocksOf('docs/fleet.md').filter((b) => b.lang === 'yaml');

  it('every YAML block parses', () => {
    expect(yamls.length).toBeGreaterThanOrEqual(3);
    for (const b of yamls) yaml(b.text, b.text.split('\n')[0]!);
  });

  it('the Kubernetes Jobs run the image of the Dockerfile: the gate\'s on the GPU nodes, the one with the history store for history', () => {
    const jobs = yamls.map((b) => yaml(b.text, 'fleet')).filter((d) => d.kind === 'Job') as { spec: { template: { spec: { containers: { image: string; args: string[] }[] } } } }[];
    expect(jobs).toHaveLength(2);
    const [gpu, history] = jobs.map((j) => j.spec.template.spec.containers[0]!);
    expect(gpu!.image).toBe('registry.example.com/mapped-reg-conformance:0.1.0');
    expect(history!.image).toBe('registry.example.com/mapped-reg-conformance:0.1.0-history');
    checkInvocations(gpu!.args.join('\n'), 'the GPU node Job');
    const docker = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
    expect(docker).toContain('docker build -t registry.example.com/mapped-reg-conformance:0.1.0 .');
    expect(docker).toContain('docker build --build-arg WITH_HISTORY=1 -t registry.example.com/mapped-reg-conformance:0.1.0-history .');
  });

  it('the history store\'s engine is named at the version the package pins', () => {
    const pinned = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { peerDependencies: Record<string, string> }).peerDependencies['@duckdb/node-api'];
    const named = [...readFileSync(join(ROOT, 'docs/fleet.md'), 'utf8').matchAll(/@duckdb\/node-api@(\S+?)[`\s]/g)].map((m) => m[1]);
    expect(named.length).toBeGreaterThan(0);
    expect(new Set(named)).toEqual(new Set([pinned]));
  });
});
