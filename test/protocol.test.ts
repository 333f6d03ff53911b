// The messages between the command and its runner processes (suites/protocol.ts): the lines as they go on the wire,
// read back as the command reads them; and the runner's reporter (reporters/events.ts) for a check that ended
// without writing its own result.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { TestCase } from 'vitest/node';
import { EventsReporter } from '../reporters/events.js';
import { checkPlan } from '../suites/plan.js';
import { EventLines, type RunnerEvent, answerLine, decodeEvent, decodeRunnerOptions, encodeEvent, encodeRunnerOptions, readAnswer } from '../suites/protocol.js';
import { ROOT, cleanEnv } from './support/command.js';

describe('the event channel', () => {
  const work = mkdtempSync(join(tmpdir(), 'mapped-reg-protocol-'));
  afterAll(() => rmSync(work, { recursive: true, force: true }));
  const protocol = join(ROOT, 'dist', 'suites', 'protocol.js');
  // a process writes two events as a runner does, with fd 3 open for it or not (then fd 3 is one of Node's own)
  const script = `const p = await import(${JSON.stringify(protocol)}); p.writeEvent({ type: 'error', message: 'one' }); p.writeEvent({ type: 'end', durationMs: 2 });`;
  const run = (fd3: boolean, env: Record<string, string> = {}): ReturnType<typeof spawnSync> =>
    spawnSync(process.execPath, ['--input-type=module', '-e', script], { env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe', fd3 ? 'pipe' : 'ignore'] });

  it('is fd 3 in a runner the command started (its options in its environment)', () => {
    const r = run(true, { MAPPED_REG_SUITE_OPTIONS: '{"devices":[]}', MAPPED_REG_EVENTS: join(work, 'unused.jsonl') });
    expect(r.stderr.toString()).toBe('');
    expect(r.output[3]!.toString()).toBe('{"type":"error","message":"one"}\n{"type":"end","durationMs":2}\n');
    expect(() => readFileSync(join(work, 'unused.jsonl'))).toThrow(/ENOENT/);
  });

  it("is MAPPED_REG_EVENTS's file in any other process, and nothing without it", () => {
    const file = join(work, 'events.jsonl');
    expect(run(false, { MAPPED_REG_EVENTS: file }).status).toBe(0);
    expect(readFileSync(file, 'utf8')).toBe('{"type":"error","message":"one"}\n{"type":"end","durationMs":2}\n');
    const none = run(false);
    expect([none.status, none.stderr.toString()]).toEqual([0, '']);
  });

  it("carries a runner's options in its environment", () => {
    const spec = { devices: [], discover: { backends: ['cuda' as const], devices: ['cuda:1'] } };
    expect(encodeRunnerOptions(spec)).toBe('{"devices":[],"discover":{"backends":["cuda"],"devices":["cuda:1"]}}');
    expect(decodeRunnerOptions(encodeRunnerOptions(spec))).toEqual(spec);
  });
});

describe('the event lines', () => {
  it('are one JSON object a line, read back whole however the channel splits them', () => {
    const events: RunnerEvent[] = [
      { type: 'start', device: 'cuda:0', id: 'timing.link', suite: 'timing', title: 'the link' },
      { type: 'result', device: 'cuda:0', id: 'timing.link', suite: 'timing', title: 'the link', status: 'pass', durationMs: 1.5, data: { link: { gts: 32 } } },
      { type: 'end', durationMs: 12 },
    ];
    const wire = events.map(encodeEvent).join('');
    expect(wire).toBe(
      '{"type":"start","device":"cuda:0","id":"timing.link","suite":"timing","title":"the link"}\n' +
        '{"type":"result","device":"cuda:0","id":"timing.link","suite":"timing","title":"the link","status":"pass","durationMs":1.5,"data":{"link":{"gts":32}}}\n' +
        '{"type":"end","durationMs":12}\n',
    );
    const read: string[] = [];
    const lines = new EventLines((l) => read.push(l));
    // cut mid-line, with a blank line, and the last line without its newline (the runner died writing it)
    const cut = `${wire}\n${encodeEvent({ type: 'error', message: 'x' }).trimEnd()}`;
    for (let i = 0; i < cut.length; i += 7) lines.push(cut.slice(i, i + 7));
    expect(read).toHaveLength(3);
    lines.end();
    expect(read.map(decodeEvent)).toEqual([...events, { type: 'error', message: 'x' }]);
  });

  it('names a line that is not JSON, cut to 200 characters', () => {
    expect(decodeEvent(`not json ${'y'.repeat(300)}`)).toEqual({ unreadable: `unreadable event: not json ${'y'.repeat(191)}` });
  });

  it("carries the command's answer to a discovering runner, and none for anything else", () => {
    const devices = [{ device: 'cuda:0', scratchDir: '/s', sizeMiB: 4, runs: 3, minRelativeSpeed: 1.1, skip: [], quiet: { waitS: 0, maxDrop: 0.1 } }];
    expect(answerLine(devices)).toBe(`${JSON.stringify({ devices })}\n`);
    expect(readAnswer(answerLine(devices).trim())).toEqual(devices);
    expect(readAnswer('')).toEqual([]);
    expect(readAnswer('{"devices":"cuda:0"}')).toEqual([]);
  });
});

/** A Vitest test case that ended without its check writing a result (a Vitest timeout). */
function orphan(id: string, device = 'cuda:0'): TestCase {
  const fake = {
    name: id,
    parent: { type: 'suite', name: device },
    meta: () => ({}),
    result: () => ({ state: 'failed', errors: [{ message: 'Test timed out in 5000ms.' }] }),
    diagnostic: () => ({ duration: 5000 }),
  };
  return fake as unknown as TestCase; // only what the reporter reads
}

describe("the runner's reporter", () => {
  it('reports a check that wrote no result in its own suite, from the catalog', async () => {
    const plan = await checkPlan();
    const written: RunnerEvent[] = [];
    const reporter = new EventsReporter(plan, (e) => written.push(e));
    for (const id of ['static.verdict', 'probe.verdict', 'timing.link']) reporter.onTestCaseResult(orphan(id));
    expect(written.map((e) => (e.type === 'result' ? [e.id, e.suite, e.status] : e.type))).toEqual([
      ['static.verdict', 'static', 'timeout'],
      ['probe.verdict', 'probe', 'timeout'],
      ['timing.link', 'timing', 'timeout'],
    ]);
    expect(written[2]).toMatchObject({ type: 'result', device: 'cuda:0', durationMs: 5000, message: 'Test timed out in 5000ms.' });
  });

  it('reports a test case that is no check of the catalog as an error of the process, not a result', () => {
    const written: RunnerEvent[] = [];
    new EventsReporter([], (e) => written.push(e)).onTestCaseResult(orphan('not.a.check'));
    expect(written).toEqual([{ type: 'error', message: 'not.a.check, not a check of the catalog, ended without a result: timeout (Test timed out in 5000ms.)' }]);
  });
});
