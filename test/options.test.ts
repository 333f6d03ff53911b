// The options as people type them (cli/options.ts, cli/numbers.ts, cli/usage-hints.ts): numbers in words, an option
// given twice, and usage errors that help; through the built command where the user meets them, the rules
// themselves unit by unit.
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseNumber } from '../cli/numbers.js';
import { COMPARE_COMMAND_OPTIONS, HISTORY_COMPARE_OPTIONS, HISTORY_REPORT_OPTIONS, LIST_OPTIONS, RUN_OPTIONS, runCommandOptions, UsageError } from '../cli/options.js';
import { commandOf, distance, nearest, usageProblem } from '../cli/usage-hints.js';
import { MAIN, ROOT } from './support/command.js';
import { type Ran, runScript, workspace } from './support/workspace.js';

const { work } = workspace('mapped-reg-options-');
const fixture = join(ROOT, 'test', 'fixtures', 'cuda.json');

function cli(args: string[], env: Record<string, string> = {}): Ran {
  return runScript(MAIN, args, work, env);
}

/** A refusal as the user must see it: exit 2, one line, no stack trace, and where to read more. */
function refused(r: Ran, message: RegExp): void {
  expect(r.code, r.stderr).toBe(2);
  const lines = r.stderr.trimEnd().split('\n');
  expect(lines, r.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(/^mapped-reg-conformance: /);
  expect(lines[0]).toMatch(message);
  expect(lines[0]).toMatch(/--help/);
  expect(r.stderr).not.toMatch(/TypeError|\n\s+at /);
}

describe('numbers as people write them', () => {
  const size = { option: '--size', what: 'a positive whole number of MiB', whole: true, min: 1, max: 1024 };
  const fraction = { option: '--max-drop', what: 'a fraction', min: 0, max: 1, below: true, percent: true };

  it('decimal, and a percentage where the number is a fraction', () => {
    expect(parseNumber('256', size)).toBe(256);
    expect(parseNumber('0.25', fraction)).toBe(0.25);
    expect(parseNumber('.5', fraction)).toBe(0.5);
    expect(parseNumber('10%', fraction)).toBeCloseTo(0.1);
    expect(parseNumber('0', fraction)).toBe(0);
    expect(parseNumber('1024', size)).toBe(1024);
  });

  it('refuses in words the empty, the blank, hex, exponents, the infinite, signs, fractions of a whole number and what is out of range', () => {
    for (const bad of ['', ' ', '\t', '0x10', '0b1', '0o7', '1e3', 'Infinity', 'NaN', '-1', '+1', '1,5', '1.5', '0', '1025', '10%', '256 MiB', ' 256']) {
      expect(() => parseNumber(bad, size), JSON.stringify(bad)).toThrow(new UsageError(`--size must be a positive whole number of MiB, not ${JSON.stringify(bad)}`));
    }
    for (const bad of ['0x10%', '%', '1', '100%', '-1%', '1e-1', '10 %']) expect(() => parseNumber(bad, fraction), bad).toThrow(/^--max-drop must be a fraction, not "/);
    // a percentage only where the option is a fraction
    expect(() => parseNumber('10%', { ...size, max: 100 })).toThrow(UsageError);
  });

  // every option that takes a number, of every command, as the command reads it
  const numeric: [string, { coerce: (v: string | string[]) => unknown }][] = [
    ...(['size', 'runs', 'min-relative-speed', 'timeout', 'max-drop', 'quiet-wait'] as const).map((k): [string, { coerce: (v: string | string[]) => unknown }] => [`run --${k}`, RUN_OPTIONS[k]]),
    ['compare --max-drop', COMPARE_COMMAND_OPTIONS['max-drop']],
    ['history compare --max-drop', HISTORY_COMPARE_OPTIONS['max-drop']],
    ['history report --max-drop', HISTORY_REPORT_OPTIONS['max-drop']],
    ['history compare --last-runs', HISTORY_COMPARE_OPTIONS['last-runs']],
    ['history report --last-runs', HISTORY_REPORT_OPTIONS['last-runs']],
  ];

  it('every numeric option of every command is read so: empty, blank, hex, infinite and absurd values refused', () => {
    // and no other option of run takes a number that escapes these rules
    const numbersOfRun = Object.entries(RUN_OPTIONS).filter(([, v]) => 'defaultDescription' in v).map(([k]) => k);
    expect(numbersOfRun.sort()).toEqual(['max-drop', 'min-relative-speed', 'quiet-wait', 'runs', 'size', 'timeout']);
    for (const [name, o] of numeric) {
      for (const bad of ['', '  ', '0x10', '0x10%', 'Infinity', '1e308', '-1', '99999999', 'abc']) expect(() => o.coerce(bad), `${name} ${JSON.stringify(bad)}`).toThrow(UsageError);
      expect(() => o.coerce(['0.1', '0.2']), `${name} twice`).toThrow(/given 2 times/);
    }
    expect(RUN_OPTIONS.timeout.coerce('0')).toBe(0); // no limit, said so
    expect(RUN_OPTIONS['quiet-wait'].coerce('0')).toBe(0);
    expect(RUN_OPTIONS['min-relative-speed'].coerce('80%')).toBeCloseTo(0.8);
    expect(RUN_OPTIONS['max-drop'].coerce('0.1')).toBe(0.1);
  });

  const cases: [string, string[], RegExp][] = [
    ['an empty --quiet-wait (was 0: no wait)', ['--quiet-wait', ''], /^mapped-reg-conformance: --quiet-wait must be a number of seconds from 0 \(no wait\) to \d+, not ""/],
    ['a blank --quiet-wait (was 0)', ['--quiet-wait', ' '], /--quiet-wait must be .*, not " "/],
    ['an empty --timeout (was 0: no limit)', ['--timeout='], /--timeout must be a number of seconds from 0 \(no limit\) to \d+, not ""/],
    ['--max-drop 0x10% (was 16%)', ['--max-drop', '0x10%'], /--max-drop must be a fraction in \[0, 1\) such as 0\.1, or a percentage such as 10%, not "0x10%"/],
    ['--quiet-wait 1e308 (waited forever)', ['--quiet-wait', '1e308'], /--quiet-wait must be .*, not "1e308"/],
    ['--size abc (was "not NaN")', ['--size', 'abc'], /--size must be a positive whole number of MiB \(at most \d+\), not "abc"/],
    ['--runs 1.5', ['--runs', '1.5'], /--runs must be a whole number from 1 to \d+, not "1\.5"/],
    ['--min-relative-speed Infinity', ['--min-relative-speed', 'Infinity'], /--min-relative-speed must be .*, not "Infinity"/],
  ];
  for (const [what, args, message] of cases) {
    it(`the command refuses ${what}: exit 2, one line, nothing written`, () => {
      const json = join(work, `n-${what.replace(/\W+/g, '_')}.json`);
      const r = cli([...args, '--backend', 'cpu', '--json', json]);
      refused(r, message);
      expect(existsSync(json)).toBe(false);
    });
  }

  it('compare and history refuse a bad --max-drop the same way', () => {
    refused(cli(['compare', fixture, fixture, '--max-drop', '0x10%']), /--max-drop must be .*not "0x10%" \(see mapped-reg-conformance compare --help\)/);
    refused(cli(['history', 'compare', '--db', join(work, 'none.db'), '--old', 'driver=1*', '--new', 'driver=2*', '--max-drop', '']), /--max-drop must be .*not ""/);
  });
});

describe('an option given twice', () => {
  const scratch = mkdtempSync(join(work, 'scratch-'));
  const skips = join(work, 'skips.txt');
  writeFileSync(skips, 'hazard.*\n');
  const a = join(work, 'a.out');
  const b = join(work, 'b.out');
  // every option of one value, in every command: refused with one line, not a TypeError and exit 1
  const cases: [string, string[], string][] = [
    ['--expectations', ['--expectations', skips, '--expectations', skips], '--expectations'],
    ['--scratch-dir', ['--scratch-dir', scratch, '--scratch-dir', scratch], '--scratch-dir'],
    ['--skips-file', ['--skips-file', skips, '--skips-file', skips], '--skips-file'],
    ['--size', ['--size', '8', '--size', '16'], '--size'],
    ['--max-drop', ['--max-drop', '10%', '--max-drop', '20%'], '--max-drop'],
    ['merge -o', ['merge', fixture, '-o', a, '-o', b], '-o'],
    ['merge -o and --output', ['merge', fixture, '-o', a, '--output', b], '-o'],
    ['report --html', ['report', fixture, '--html', a, '--html', b], '--html'],
    ['history add --db', ['history', 'add', fixture, '--db', a, '--db', b], '--db'],
    ['history compare --db', ['history', 'compare', '--db', a, '--db', b, '--old', 'driver=1', '--new', 'driver=2'], '--db'],
    ['history compare --old', ['history', 'compare', '--db', a, '--old', 'driver=1', '--old', 'driver=3', '--new', 'driver=2'], '--old'],
    ['history compare --new', ['history', 'compare', '--db', a, '--old', 'driver=1', '--new', 'driver=2', '--new', 'driver=3'], '--new'],
    ['history report --html', ['history', 'report', '--db', a, '--html', b, '--html', b], '--html'],
    ['list --scratch-dir', ['list', '--scratch-dir', scratch, '--scratch-dir', scratch], '--scratch-dir'],
  ];
  // --baseline is repeatable (several runs of the baseline), each run once: the same file twice would count its run twice
  it('--baseline: the same file twice is refused, exit 2 and one line saying so, nothing written', () => {
    const r = cli(['--baseline', fixture, '--baseline', fixture, '--json', a]);
    refused(r, /^mapped-reg-conformance: --baseline ".*" was given 2 times: give each run of the baseline once/);
    expect(existsSync(a)).toBe(false);
  });
  for (const [what, args, option] of cases) {
    it(`${what}: exit 2 and one line saying so, nothing written`, () => {
      const r = cli(args);
      refused(r, new RegExp(`^mapped-reg-conformance: ${option} was given 2 times \\(".*", ".*"\\): give it once`));
      expect(existsSync(a)).toBe(false);
      expect(existsSync(b)).toBe(false);
    });
  }

  it('--json, --junit and --metrics given twice: each file named is written, the same report in each', () => {
    const out = mkdtempSync(join(work, 'outs-'));
    const f = (name: string): string => join(out, name);
    const r = cli(['--backend', 'cpu', '--scratch-dir', scratch, '--json', f('a.json'), '--json', f('b.json'), '--junit', f('a.xml'), '--junit', f('b.xml'), '--metrics', f('a.prom'), '--metrics', f('b.prom')]);
    expect(r.code, r.stderr).toBe(0);
    for (const ext of ['json', 'xml', 'prom']) expect(readFileSync(f(`b.${ext}`), 'utf8')).toBe(readFileSync(f(`a.${ext}`), 'utf8'));
    expect(JSON.parse(readFileSync(f('a.json'), 'utf8')).devices.map((d: { id: string }) => d.id)).toEqual(['cpu']);
    expect(readFileSync(f('a.xml'), 'utf8')).toContain('<testsuite name="gate [PASS] on ');
  });

  it('the same file named twice is refused as any two reports naming one file are', () => {
    const r = cli(['--backend', 'cpu', '--scratch-dir', scratch, '--json', a, '--json', a]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--json and --json name the same file/);
    expect(existsSync(a)).toBe(false);
  });

  it('list --checks --json given twice writes the list to each file', () => {
    const out = mkdtempSync(join(work, 'list-'));
    const r = cli(['list', '--checks', '--json', join(out, 'a.json'), '--json', join(out, 'b.json')]);
    expect(r.code, r.stderr).toBe(0);
    expect(readFileSync(join(out, 'b.json'), 'utf8')).toBe(readFileSync(join(out, 'a.json'), 'utf8'));
    expect(JSON.parse(readFileSync(join(out, 'a.json'), 'utf8')).checks.length).toBeGreaterThan(5);
  });
});

describe('usage errors that help', () => {
  it('an unknown option keeps its dashes and suggests the nearest option of the command', () => {
    refused(cli(['--bogus']), /^mapped-reg-conformance: unknown option --bogus; usage: mapped-reg-conformance \[run\] \[options\] \(more: mapped-reg-conformance --help\)$/);
    refused(cli(['--max-dorp', '5%']), /^mapped-reg-conformance: unknown option --max-dorp \(did you mean --max-drop\?\); usage: /);
    refused(cli(['--basline', fixture]), /unknown option --basline \(did you mean --baseline\?\)/);
    refused(cli(['compare', fixture, fixture, '--jsno']), /unknown option --jsno \(did you mean --json\?\); usage: mapped-reg-conformance compare OLD NEW/);
    refused(cli(['merge', fixture, '-o', join(work, 'm.json'), '-x']), /unknown option -x; usage: mapped-reg-conformance merge FILES\.\.\. -o OUT/);
    refused(cli(['runtimes', '--basline-runtime', 'x']), /unknown option --basline-runtime \(did you mean --baseline-runtime\?\); usage: mapped-reg-conformance runtimes --out DIR/);
  });

  it('a mistyped command: did you mean run?', () => {
    refused(cli(['rnu']), /^mapped-reg-conformance: unexpected argument "rnu" \(did you mean run\?\)/);
    refused(cli(['lsit']), /\(did you mean list\?\)/);
    refused(cli(['runtime']), /unexpected argument "runtime" \(did you mean runtimes\?\)/);
    refused(cli(['history', 'compre']), /unexpected argument "compre" \(did you mean history compare\?\); usage: mapped-reg-conformance history add\|compare\|report/);
  });

  it("too few arguments name the command's usage, not yargs' count", () => {
    const r = cli(['compare']);
    refused(r, /^mapped-reg-conformance: compare needs 2 arguments, got 0; usage: mapped-reg-conformance compare OLD NEW .*\(more: mapped-reg-conformance compare --help\)$/);
    expect(r.stderr).not.toMatch(/non-option/);
    refused(cli(['merge', fixture]), /^mapped-reg-conformance: merge needs -o; usage: mapped-reg-conformance merge FILES\.\.\. -o OUT/);
    refused(cli(['report']), /^mapped-reg-conformance: report needs 1 argument, got 0; usage: mapped-reg-conformance report FILES\.\.\. --html OUT/);
    refused(cli(['history']), /^mapped-reg-conformance: history needs a command: add, compare or report; usage: /);
    refused(cli(['--size']), /^mapped-reg-conformance: --size needs a value; usage: /);
  });

  it('an option of run given to list says so, and names --help', () => {
    refused(cli(['list', '--baseline', fixture]), /list: --baseline is an option of run alone \(list registers, copies and judges nothing; see mapped-reg-conformance list --help\)$/);
  });

  it('the rules: which command, the nearest word, each message', () => {
    expect(commandOf([])).toBe('run');
    expect(commandOf(['--size', '8'])).toBe('run');
    expect(commandOf(['history', 'report', '--db', 'x'])).toBe('history report');
    expect(commandOf(['history'])).toBe('history');
    expect(distance('rnu', 'run')).toBe(1);
    expect(distance('', 'run')).toBe(3);
    expect(distance('merge', 'merge')).toBe(0);
    expect(nearest('rnu', ['run', 'list'])).toBe('run');
    expect(nearest('base', ['baseline', 'backend'])).toBe('baseline');
    expect(nearest('zzzzzz', ['run', 'list'])).toBeUndefined();
    expect(nearest('x', ['o', 'db'])).toBeUndefined();
    expect(usageProblem('Unknown arguments: bogus-opt, bogusOpt', ['--bogus-opt'])).toBe('unknown option --bogus-opt; usage: mapped-reg-conformance [run] [options] (more: mapped-reg-conformance --help)');
    expect(usageProblem('Missing required argument: db', ['history', 'add', 'x'])).toBe('history add needs --db; usage: mapped-reg-conformance history add PATHS... --db FILE (more: mapped-reg-conformance history add --help)');
  });
});

describe('the options of a run, one frozen object', () => {
  it('holds every default applied once, the gate, the quiet wait and the selection; nothing may change it after', async () => {
    const scratchDir = mkdtempSync(join(work, 'frozen-'));
    const o = await runCommandOptions({ device: [], backend: ['cpu'], check: [], skip: [], scratchDir }, false, {});
    expect(o).toMatchObject({ sizeMiB: 256, runs: 7, timeoutS: 120, minRelativeSpeed: 0.8, backends: ['cpu'], listOnly: false });
    expect(o.gate).toEqual({ requires: [], maxDrop: 0.1 });
    expect(o.suite.quiet).toEqual({ waitS: 60, maxDrop: 0.1 });
    expect(o.selection).toEqual({ backends: ['cpu'], devices: [] });
    expect(Object.isFrozen(o) && Object.isFrozen(o.gate) && Object.isFrozen(o.suite) && Object.isFrozen(o.suite.quiet) && Object.isFrozen(o.selection)).toBe(true);
    // --max-drop reaches the gate and the device runners as one figure
    const given = await runCommandOptions({ device: [], backend: ['cpu'], check: [], skip: [], scratchDir, maxDrop: 0.25, quietWait: 5 }, false, {});
    expect(given.gate.maxDrop).toBe(0.25);
    expect(given.suite.quiet).toEqual({ waitS: 5, maxDrop: 0.25 });
  });

  it("list's options are run's, those of run alone hidden", () => {
    // list's own: --checks, and --runtimes with the folder it looks under (list --runtimes)
    expect(Object.keys(LIST_OPTIONS).filter((k) => !['checks', 'runtimes', 'runtime-root'].includes(k)).sort()).toEqual(Object.keys(RUN_OPTIONS).sort());
    expect(LIST_OPTIONS.baseline).toMatchObject({ hidden: true });
    expect('hidden' in LIST_OPTIONS.backend).toBe(false);
  });
});
