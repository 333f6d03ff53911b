// The GitHub Action (action.yml, composite): its steps run here as the runner runs them, from the YAML as written.
//
// What the runner does for a composite action's `run:` step, and what this file does in its place:
// - it substitutes the expressions `${{ inputs.x }}` (the `with:` value, else the input's default, else ''),
//   `${{ github.action_path }}` and, for the action's outputs, `${{ steps.<id>.outputs.<name> }}` in `env:`,
//   `working-directory:` and `run:` before anything runs. A composite action gets no INPUT_* variables (those are
//   for JavaScript and Docker actions: actions/runner#665), so the scripts must not read them, and here they are
//   not set either: a script reading $INPUT_MAX-DROP would pass here only if it passed there;
// - it writes the script to a file and runs `bash --noprofile --norc -eo pipefail FILE` (`shell: bash`), in
//   `working-directory` or the workspace, with GITHUB_ACTION_PATH, GITHUB_WORKSPACE, RUNNER_TEMP, and a fresh
//   GITHUB_OUTPUT and GITHUB_STEP_SUMMARY file per step;
// - it reads each step's GITHUB_OUTPUT (`name=value` and `name<<DELIMITER` ... `DELIMITER`) into
//   steps.<id>.outputs, skips the steps after a failed one, and evaluates the action's outputs all the same
//   (CompositeActionHandler processes them after the steps, failed or not);
// - on cancellation it sends SIGINT, then SIGTERM, to the step's shell alone (ProcessInvoker.SendSignal).
// The action runs from a copy of this working tree, installed by its own first step (npm ci from npm's cache).
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { RunResult } from '../results/types.js';
import { buildDoubles } from './double/build.js';
import { NO_HAZARDS, ROOT, cleanEnv } from './support/command.js';
import { validateJunit } from './support/junit-xsd.js';
import { waitUntil } from './support/processes.js';

const work = mkdtempSync(join(tmpdir(), 'mapped-reg-action-'));
// the action's folder holds a full npm ci (~180 MB): removing it takes a while on a busy machine
afterAll(() => rmSync(work, { recursive: true, force: true, maxRetries: 5 }), 120_000);

// ---- the action, as the runner reads it ----

interface Step {
  name?: string;
  id?: string;
  shell?: string;
  run?: string;
  env?: Record<string, string>;
  'working-directory'?: string;
  if?: string;
  uses?: string;
}
interface Action {
  name: string;
  description: string;
  inputs: Record<string, { description: string; required?: boolean; default?: string }>;
  outputs: Record<string, { description: string; value: string }>;
  runs: { using: string; steps: Step[] };
}

const ACTION_FILE = join(ROOT, 'action.yml');
const action = (): Action => parse(readFileSync(ACTION_FILE, 'utf8')) as Action;

/** The values an expression may name: inputs, github.action_path, steps.<id>.outputs. */
interface Contexts {
  inputs: Record<string, string>;
  actionPath: string;
  steps: Record<string, Record<string, string>>;
}

/**
 * Substitutes every `${{ ... }}` of `text` as the runner does for the few expressions this action may use; any
 * other expression is an error here (the action would need this harness to learn it first).
 */
function substitute(text: string, ctx: Contexts): string {
  return text.replace(/\$\{\{\s*(.*?)\s*\}\}/g, (_all, expr: string) => {
    let m: RegExpExecArray | null;
    if ((m = /^inputs\.([A-Za-z_][\w-]*)$/.exec(expr))) {
      if (!(m[1]! in ctx.inputs)) throw new Error(`the action uses an undeclared input: ${expr}`);
      return ctx.inputs[m[1]!]!;
    }
    if (expr === 'github.action_path') return ctx.actionPath;
    if ((m = /^steps\.([A-Za-z_][\w-]*)\.outputs\.([A-Za-z_][\w-]*)$/.exec(expr))) return ctx.steps[m[1]!]?.[m[2]!] ?? '';
    throw new Error(`an expression this harness does not evaluate: ${expr}`);
  });
}

/** A GITHUB_OUTPUT file as the runner reads it: `name=value` lines and `name<<DELIMITER` blocks. */
function parseOutputFile(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line === '') continue;
    const eq = line.indexOf('=');
    const heredoc = line.indexOf('<<');
    if (eq >= 0 && (heredoc < 0 || eq < heredoc)) {
      out[line.slice(0, eq)] = line.slice(eq + 1);
      continue;
    }
    if (heredoc <= 0) throw new Error(`GITHUB_OUTPUT line ${i + 1}: not name=value nor name<<DELIMITER: ${line}`);
    const name = line.slice(0, heredoc);
    const delimiter = line.slice(heredoc + 2);
    const value: string[] = [];
    for (i++; i < lines.length && lines[i] !== delimiter; i++) value.push(lines[i]!);
    if (i >= lines.length) throw new Error(`GITHUB_OUTPUT: no closing delimiter ${delimiter} for ${name}`);
    out[name] = value.join('\n');
  }
  return out;
}

interface StepRun {
  step: Step;
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  outputs: Record<string, string>;
  summary: string;
}

interface Job {
  /** The `with:` of the workflow's step. */
  with?: Record<string, string>;
  /** The job's environment (the workflow's `env:`, the runner's variables). */
  env?: Record<string, string | undefined>;
  actionPath: string;
  workspace: string;
}

/** The shell's process, for a test that signals it, and the step's result once it ends. */
interface Started {
  child: ChildProcess;
  stdout(): string;
  done: Promise<StepRun>;
}

function inputsOf(a: Action, given: Record<string, string> = {}): Record<string, string> {
  for (const k of Object.keys(given)) if (!(k in a.inputs)) throw new Error(`Unexpected input '${k}': the action declares ${Object.keys(a.inputs).join(', ')}`);
  return Object.fromEntries(Object.entries(a.inputs).map(([k, v]) => [k, given[k] ?? v.default ?? '']));
}

let scriptSerial = 0;

/** Starts one `run:` step of the action as the runner does. */
function startStep(step: Step, ctx: Contexts, job: Job): Started {
  if (step.shell !== 'bash' || typeof step.run !== 'string') throw new Error(`a step the harness cannot run: ${JSON.stringify(step)}`);
  const temp = join(job.workspace, '..', 'runner-temp');
  mkdirSync(temp, { recursive: true });
  const n = scriptSerial++;
  const script = join(temp, `step-${n}.sh`);
  writeFileSync(script, substitute(step.run, ctx));
  const output = join(temp, `output-${n}`);
  const summary = join(temp, `summary-${n}.md`);
  writeFileSync(output, '');
  writeFileSync(summary, '');
  const stepEnv = Object.fromEntries(Object.entries(step.env ?? {}).map(([k, v]) => [k, substitute(String(v), ctx)]));
  const env = cleanEnv({
    ...job.env,
    CI: 'true',
    GITHUB_ACTIONS: 'true',
    GITHUB_WORKSPACE: job.workspace,
    GITHUB_ACTION_PATH: ctx.actionPath,
    RUNNER_TEMP: temp,
    GITHUB_OUTPUT: output,
    GITHUB_STEP_SUMMARY: summary,
    ...stepEnv,
  });
  // nothing of this test's own runner: no INPUT_* (a composite action gets none), no npm_* (npm test's own)
  for (const k of Object.keys(env)) if (k.startsWith('INPUT_') || k.startsWith('npm_')) delete env[k];
  const cwd = step['working-directory'] ? substitute(step['working-directory'], ctx) : job.workspace;
  const child = spawn('bash', ['--noprofile', '--norc', '-eo', 'pipefail', script], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const done = new Promise<StepRun>((resolve) =>
    child.on('close', (code, signal) => resolve({ step, code, signal, stdout, stderr, outputs: parseOutputFile(readFileSync(output, 'utf8')), summary: readFileSync(summary, 'utf8') })),
  );
  return { child, stdout: () => stdout, done };
}

interface ActionRun {
  steps: StepRun[];
  /** The status of the step that failed, else 0: what the runner reports for the action's step. */
  code: number | null;
  outputs: Record<string, string>;
  /** The job summary: every step's GITHUB_STEP_SUMMARY. */
  summary: string;
  log: string;
}

function contextsOf(a: Action, job: Job): Contexts {
  return { inputs: inputsOf(a, job.with), actionPath: job.actionPath, steps: {} };
}

function finish(a: Action, ctx: Contexts, steps: StepRun[]): ActionRun {
  const failed = steps.find((s) => s.code !== 0);
  const outputs = Object.fromEntries(Object.entries(a.outputs).map(([k, v]) => [k, substitute(v.value, ctx)]));
  return { steps, code: failed ? failed.code : 0, outputs, summary: steps.map((s) => s.summary).join(''), log: steps.map((s) => s.stdout + s.stderr).join('') };
}

/** Runs the action's steps in order; those after a failed step are skipped (none has an `if:`). */
async function runAction(job: Job): Promise<ActionRun> {
  const a = action();
  const ctx = contextsOf(a, job);
  const steps: StepRun[] = [];
  for (const step of a.runs.steps) {
    if (steps.some((s) => s.code !== 0)) break;
    const r = await startStep(step, ctx, job).done;
    if (step.id) ctx.steps[step.id] = r.outputs;
    steps.push(r);
  }
  return finish(a, ctx, steps);
}

// ---- the harness itself ----

describe('the harness reads GITHUB_OUTPUT and expressions as the runner does', () => {
  it('name=value and name<<DELIMITER blocks (a value over several lines, a value holding = and <<)', () => {
    expect(parseOutputFile('a=1\nb<<EOF\nline one\nx=y <<z\nEOF\nc=p=q<<r\nempty<<E\nE\n')).toEqual({ a: '1', b: 'line one\nx=y <<z', c: 'p=q<<r', empty: '' });
    expect(() => parseOutputFile('b<<EOF\nnever closed\n')).toThrow(/no closing delimiter/);
  });
  it('${{ inputs.x }} with dashes, github.action_path, steps outputs; anything else is refused', () => {
    const ctx = { inputs: { 'max-drop': '5%', size: '' }, actionPath: '/a', steps: { run: { passed: 'true' } } };
    expect(substitute('x ${{ inputs.max-drop }} ${{inputs.size}}|${{ github.action_path }}/${{ steps.run.outputs.passed }}${{ steps.no.outputs.x }}', ctx)).toBe('x 5% |/a/true');
    expect(() => substitute('${{ inputs.nope }}', ctx)).toThrow(/undeclared input/);
    expect(() => substitute('${{ secrets.TOKEN }}', ctx)).toThrow(/does not evaluate/);
  });
});

// ---- the action's contract ----

describe('action.yml', () => {
  it('is a composite action of bash steps; its inputs and outputs are the contract; no script reads an input but through env:', () => {
    const a = action();
    expect(a.runs.using).toBe('composite');
    for (const s of a.runs.steps) {
      expect(s.shell, s.name).toBe('bash');
      expect(typeof s.run, s.name).toBe('string');
      // inputs reach a script through env: only (a value is data, never shell code), and never as INPUT_*
      expect(s.run, s.name).not.toMatch(/\$\{\{/);
      expect(s.run, s.name).not.toMatch(/INPUT_/);
      expect(s.uses, s.name).toBeUndefined();
    }
    for (const name of ['baseline', 'expectations', 'require', 'max-drop', 'size', 'check', 'skip', 'scratch-dir']) {
      expect(a.inputs[name], name).toBeDefined();
      expect(a.inputs[name]!.required ?? false, name).toBe(false);
      expect(a.inputs[name]!.description.length, name).toBeGreaterThan(20);
    }
    expect(Object.keys(a.outputs)).toEqual(expect.arrayContaining(['results', 'junit', 'verdicts', 'passed']));
    for (const [k, v] of Object.entries(a.outputs)) expect(v.value, k).toBe(`\${{ steps.run.outputs.${k} }}`);
    // the run step passes each input to the command: every input is read by some step
    const used = a.runs.steps.flatMap((s) => Object.values(s.env ?? {}).map(String));
    for (const name of Object.keys(a.inputs)) expect(used, name).toContain(`\${{ inputs.${name} }}`);
  });
});

// ---- the action, run ----

const doubles = buildDoubles();
/** The double's copies paced, as in test/gate.test.ts: registered at 2 GB/s, page-locked at 1.5, pageable at 0.5. */
const RATES = 'registered=2,pinned=1.5,pageable=0.5';
/**
 * The action's `args` (one argument a line) for the runs whose tests read no hazard check, the costliest checks (a
 * 32 MiB file, a child process...); a baseline and the runs gated against it skip the same, as the gate compares
 * check by check. NO_HAZARDS, one argument a line.
 */
const NO_HAZARDS_ARGS = `${NO_HAZARDS.join('\n')}\n`;
const cuda = (rates = RATES, extra: Record<string, string> = {}): Record<string, string> => ({ MAPPED_REG_CUDA_LIBRARY: doubles.cuda, MAPPED_REG_DOUBLE_RATES: rates, ...extra });

/** The action's folder: a copy of this working tree (what `uses: owner/repo@ref` downloads), not yet installed. */
let actionPath: string;
let serial = 0;
const newWorkspace = (): string => {
  const w = join(work, `job-${serial++}`, 'workspace');
  mkdirSync(w, { recursive: true });
  return w;
};
const readJson = (file: string): RunResult => JSON.parse(readFileSync(file, 'utf8')) as RunResult;

beforeAll(() => {
  actionPath = join(work, 'action');
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: ROOT, encoding: 'utf8' }).split('\0').filter(Boolean);
  for (const f of files) {
    const from = join(ROOT, f);
    if (!existsSync(from) || !statSync(from).isFile()) continue;
    mkdirSync(dirname(join(actionPath, f)), { recursive: true });
    copyFileSync(from, join(actionPath, f));
  }
  expect(existsSync(join(actionPath, 'node_modules'))).toBe(false);
  expect(existsSync(join(actionPath, 'dist'))).toBe(false);
});

/** The action's first use in its fresh folder (its install step installs it): once, for whichever test comes first. */
let first: Promise<{ workspace: string; r: ActionRun }> | undefined;
const firstUse = (): Promise<{ workspace: string; r: ActionRun }> =>
  (first ??= (async () => {
    const workspace = newWorkspace();
    // NODE_ENV=production (some runners set it) must not leave out the build's TypeScript
    return { workspace, r: await runAction({ actionPath, workspace, with: { size: '8' }, env: { NODE_ENV: 'production' } }) };
  })());

/** A baseline run of one CUDA GPU (the driver double), then upgrades gated against it through the action's inputs. */
function gatedUpgradeTests(): void {
  let baseline: string;
  beforeAll(async () => {
    const workspace = newWorkspace();
    const r = await runAction({ actionPath, workspace, with: { size: '8', backend: 'cuda\n', results: 'out/baseline.json', junit: 'out/baseline.xml', args: NO_HAZARDS_ARGS }, env: cuda() });
    expect(r.code, r.log).toBe(0);
    expect(r.outputs.passed).toBe('true');
    expect(JSON.parse(r.outputs.verdicts!)).toEqual({ 'cuda:0': 'Usable' });
    // the results' folder was made
    expect(r.outputs.results).toBe(join(workspace, 'out', 'baseline.json'));
    baseline = r.outputs.results!;
  }, 120_000);

  it('the registered GB/s fell 25%: the step fails with the command\'s status (1), passed=false, and the summary, JUnit and JSON say why', async () => {
    const workspace = newWorkspace();
    const r = await runAction({ actionPath, workspace, with: { size: '8', backend: 'cuda', baseline, 'max-drop': '10%', args: NO_HAZARDS_ARGS }, env: cuda('registered=1.5,pinned=1.5,pageable=0.5') });
    expect(r.steps.map((s) => s.code), r.log).toEqual([0, 1]);
    expect(r.code).toBe(1);
    expect(r.outputs.passed).toBe('false');
    expect(r.outputs['exit-code']).toBe('1');
    expect(JSON.parse(r.outputs.verdicts!)).toEqual({ 'cuda:0': 'Usable' });
    const json = readJson(r.outputs.results!);
    expect(json.gate!.pass).toBe(false);
    expect(json.gate!.maxDrop).toBe(0.1);
    // the page-locked copies paced as in the baseline: registered / page-locked fell with the registered figure
    expect(json.gate!.reasons.map((x) => x.kind)).toEqual(['bandwidth', 'registration']);
    expect(r.summary).toMatch(/\*\*FAIL\*\*: /);
    // Markdown: the arrow's > escaped
    expect(r.summary).toMatch(/^- cuda:0 Double CUDA Device \(0000:00:00\.0\): registered 1\.\d\d GB\/s -\\> 1\.\d\d GB\/s \(-2\d\.\d%\): a drop of /m);
    const junit = readFileSync(r.outputs.junit!, 'utf8');
    expect(junit).toContain('<testsuite name="gate [FAIL] on ');
    expect(junit).toMatch(/<testcase classname="cuda:0\.gate" name="cuda:0 &gt; gate\.bandwidth"[^>]*>\s*<failure /);
    expect(r.steps[1]!.stdout.trimEnd().split('\n').at(-1)).toMatch(/^FAIL: cuda:0 Double CUDA Device \(0000:00:00\.0\): registered /);
  }, 120_000);

  it('max-drop (an input with a dash) reaches the command: 30% lets the same drop pass', async () => {
    const r = await runAction({ actionPath, workspace: newWorkspace(), with: { size: '8', backend: 'cuda', baseline, 'max-drop': '30%', args: NO_HAZARDS_ARGS }, env: cuda('registered=1.5,pinned=1.5,pageable=0.5') });
    expect(r.code, r.log).toBe(0);
    expect(r.outputs.passed).toBe('true');
    expect(readJson(r.outputs.results!).gate!.maxDrop).toBe(0.3);
  }, 120_000);

  it('multi-valued inputs: one value a line, blank lines and spaces left out; args: one argument a line', async () => {
    const r = await runAction({
      actionPath,
      workspace: newWorkspace(),
      with: { size: '8', backend: 'cuda\ncpu\n', require: 'cuda\n\n   cuda:0  \ncuda=2\n', args: `--runs\n3\n${NO_HAZARDS_ARGS}` },
      env: cuda(),
    });
    expect(r.code, r.log).toBe(1);
    const json = readJson(r.outputs.results!);
    expect(json.options.backends).toEqual(['cuda', 'cpu']);
    expect(json.options.runs).toBe(3);
    expect(json.gate!.requires).toEqual(['cuda', 'cuda:0', 'cuda=2']);
    expect(json.gate!.reasons.map((x) => x.text)).toEqual(['--require cuda=2: exactly 2 cuda devices required, found cuda:0']);
    expect(JSON.parse(r.outputs.verdicts!)).toEqual({ 'cuda:0': 'Usable', cpu: 'Not_needed' });
    expect(r.outputs.passed).toBe('false');
  }, 120_000);
}

/** The action's run step started, a check hung, and SIGINT sent to the step's shell alone, as the runner cancels. */
async function cancelledAsTheRunnerCancels(): Promise<void> {
  const a = action();
  const workspace = newWorkspace();
  const scratch = join(workspace, '..', 'scratch');
  mkdirSync(scratch);
  const job: Job = { actionPath, workspace, with: { size: '8', backend: 'cuda', 'scratch-dir': scratch, args: '--timeout\n60' }, env: cuda(RATES, { MAPPED_REG_FORCE_HANG: 'probe.release' }) };
  const ctx = contextsOf(a, job);
  const runStep = a.runs.steps.find((s) => s.id === 'run')!;
  const s = startStep(runStep, ctx, job);
  let r: StepRun;
  try {
    await waitUntil(() => /cuda:0 probe\.verdict pass/.test(s.stdout()), 60_000, 'probe.verdict to pass (probe.release hangs next)');
    s.child.kill('SIGINT');
    r = await s.done;
  } finally {
    if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
  }
  ctx.steps.run = r.outputs;
  const out = finish(a, ctx, [r]);
  expect(r.signal, r.stdout + r.stderr).toBeNull();
  expect(r.code, r.stdout + r.stderr).toBe(130);
  expect(r.stdout).toMatch(/interrupted \(SIGINT\)/);
  expect(out.outputs).toMatchObject({ passed: 'false', 'exit-code': '130', results: join(workspace, 'mapped-reg-results.json') });
  const json = readJson(out.outputs.results!);
  expect(json.incomplete).toBe(true);
  expect(JSON.parse(out.outputs.verdicts!)).toEqual({ 'cuda:0': 'Usable' });
  // the device's process stopped and its scratch files removed (the command's own promise)
  expect(readdirSync(scratch)).toEqual([]);
}

describe('the action on a runner with no GPU, then with the driver double', () => {
  beforeAll(() => firstUse(), 240_000);

  it('first use: the install step runs npm ci and builds; the run passes with no GPU; outputs, job summary and JUnit written; a second use finds it installed', async () => {
    const { workspace, r } = await firstUse();
    expect(r.steps.map((s) => s.code), r.log).toEqual([0, 0]);
    expect(r.steps[0]!.stdout + r.steps[0]!.stderr).toMatch(/added \d+ packages/);
    expect(existsSync(join(actionPath, 'dist', 'cli', 'main.js'))).toBe(true);
    expect(r.code).toBe(0);
    expect(r.outputs.passed).toBe('true');
    expect(r.outputs['exit-code']).toBe('0');
    expect(r.outputs.results).toBe(join(workspace, 'mapped-reg-results.json'));
    expect(r.outputs.junit).toBe(join(workspace, 'mapped-reg-junit.xml'));
    const verdicts = JSON.parse(r.outputs.verdicts!) as Record<string, string>;
    expect(verdicts.cpu).toBe('Not_needed');
    const json = readJson(r.outputs.results!);
    expect(verdicts).toEqual(Object.fromEntries(json.devices.map((d) => [d.id, d.verdict.kind])));
    expect(json.options.sizeMiB).toBe(8);
    expect(json.gate!.pass).toBe(true);
    expect(r.summary).toContain('**PASS**: ');
    expect(r.steps[1]!.stdout).toMatch(/no GPU driver was found/);
    // no error about the report, which is there; the log ends on the gate's answer
    expect(r.steps[1]!.stdout).not.toMatch(/::error/);
    expect(r.steps[1]!.stdout.trimEnd().split('\n').at(-1)).toMatch(/^PASS: /);
    const junit = readFileSync(r.outputs.junit!, 'utf8');
    expect(junit).toContain('<testsuite name="gate [PASS] on ');
    const v = validateJunit(junit);
    expect(v.ok, v.output).toBe(true);

    const again = await runAction({ actionPath, workspace: newWorkspace(), with: { size: '8', backend: 'cpu' } });
    expect(again.code, again.log).toBe(0);
    expect(again.steps[0]!.stdout).toMatch(/already installed in /);
    expect(JSON.parse(again.outputs.verdicts!)).toEqual({ cpu: 'Not_needed' });
  }, 240_000);

  describe('a driver upgrade gated against a baseline (the driver double, one CUDA GPU)', gatedUpgradeTests);

  it('check and skip are passed as --check/--skip only when set; a glob that matches no check is bad input: exit 2, no results (a stale file of an earlier run is not taken for them)', async () => {
    const workspace = newWorkspace();
    // an earlier job's results, left in the workspace of a self-hosted runner
    writeFileSync(join(workspace, 'mapped-reg-results.json'), '{"stale": true}');
    for (const input of ['check', 'skip']) {
      const r = await runAction({ actionPath, workspace, with: { size: '8', backend: 'cpu', [input]: 'no.such.check.*\n' } });
      expect(r.code, r.log).toBe(2);
      expect(r.steps[1]!.stderr).toMatch(new RegExp(`^mapped-reg-conformance: .*\\b${input}\\b`, 'm'));
      expect(r.outputs).toMatchObject({ results: '', junit: '', verdicts: '{}', passed: 'false', 'exit-code': '2' });
      expect(r.summary).toBe('');
      // no report: said as an error of the step, which fails with the command's status
      expect(r.steps[1]!.stdout).toMatch(/^::error title=mapped-reg-conformance::no JUnit report written to .*mapped-reg-junit\.xml \(absent or empty\): the step fails \(exit status 2\)$/m);
    }
    expect(readFileSync(join(workspace, 'mapped-reg-results.json'), 'utf8')).toBe('{"stale": true}');
  }, 120_000);

  it('cancelled as the runner cancels (SIGINT to the step\'s shell alone): the command stops its device, writes what finished, exits 130; the outputs are written', () => cancelledAsTheRunnerCancels(), 120_000);

  it('no Node.js 20 on PATH: the install step fails with one error line saying what to add', async () => {
    const bin = join(work, 'old-node-bin');
    mkdirSync(bin, { recursive: true });
    writeFileSync(join(bin, 'node'), '#!/bin/sh\necho v18.19.0\n');
    chmodSync(join(bin, 'node'), 0o755);
    const r = await runAction({ actionPath, workspace: newWorkspace(), env: { PATH: `${bin}:${process.env.PATH}` } });
    expect(r.steps.map((s) => s.code)).toEqual([2]);
    expect(r.steps[0]!.stdout).toBe('::error::mapped-reg-conformance needs Node.js 20 or later on PATH (found: v18.19.0): add actions/setup-node before this step\n');
    expect(r.outputs).toMatchObject({ results: '', passed: '' });
  });

  it('args naming a second JUnit file (--junit twice): each file written, the junit output names the action\'s own, the step passes', async () => {
    const workspace = newWorkspace();
    mkdirSync(join(workspace, 'out2'));
    const r = await runAction({ actionPath, workspace, with: { size: '8', backend: 'cpu', args: '--junit\nout2/extra.xml' } });
    expect(r.code, r.log).toBe(0);
    expect(r.outputs.junit).toBe(join(workspace, 'mapped-reg-junit.xml'));
    const junit = readFileSync(r.outputs.junit!, 'utf8');
    expect(junit).toContain('<testsuite name="gate [PASS] on ');
    expect(readFileSync(join(workspace, 'out2', 'extra.xml'), 'utf8')).toBe(junit);
  }, 120_000);

  it('the results path may be absolute', async () => {
    const out = join(work, 'elsewhere', 'deep', 'r.json');
    const r = await runAction({ actionPath, workspace: newWorkspace(), with: { size: '8', backend: 'cpu', results: out } });
    expect(r.code, r.log).toBe(0);
    expect(r.outputs.results).toBe(out);
    expect(isAbsolute(r.outputs.junit!)).toBe(true);
  }, 120_000);
});
