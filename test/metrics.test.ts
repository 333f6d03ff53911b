// --metrics: the run as OpenMetrics text for node_exporter's textfile collector. The text is read by a real
// Prometheus text parser from npm (parse-prometheus-text-format), and by a strict parser of the format written
// below for the rules that one lets pass (names, label escapes, one TYPE per family before its samples, families
// not split, no series twice, no timestamps, `# EOF` last).
import parsePrometheus from 'parse-prometheus-text-format';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { escapeLabelValue, metricsText } from '../reporters/metrics.js';
import type { RunResult } from '../results/types.js';
import { decide } from '../results/gate.js';
import { MAIN, ROOT, cleanEnv } from './support/command.js';

const work = mkdtempSync(join(tmpdir(), 'mapped-reg-metrics-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
const fixture = (): RunResult => JSON.parse(readFileSync(join(ROOT, 'test', 'fixtures', 'cuda.json'), 'utf8')) as RunResult;

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}
interface Parsed {
  families: Map<string, { type: string; help: string }>;
  samples: Sample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const VALUE = /^(?:[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|[+-]Inf|NaN)$/;

/** The label set of a sample (the text between its braces), its escapes undone; throws on anything the format refuses. */
function parseLabels(text: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  let i = 0;
  while (i < text.length) {
    const eq = text.indexOf('=', i);
    if (eq < 0) throw new Error(`a label without a value: ${line}`);
    const name = text.slice(i, eq);
    if (!LABEL.test(name) || name.startsWith('__')) throw new Error(`bad label name ${name}: ${line}`);
    if (name in labels) throw new Error(`label ${name} twice: ${line}`);
    if (text[eq + 1] !== '"') throw new Error(`a label value not quoted: ${line}`);
    let v = '';
    let j = eq + 2;
    for (;;) {
      const c = text[j];
      if (c === undefined) throw new Error(`a label value not closed: ${line}`);
      if (c === '"') break;
      if (c === '\\') {
        const e = text[j + 1];
        if (e === '\\') v += '\\';
        else if (e === '"') v += '"';
        else if (e === 'n') v += '\n';
        else throw new Error(`bad escape \\${e}: ${line}`);
        j += 2;
      } else {
        if (c === '\n') throw new Error(`a raw line feed in a label value: ${line}`);
        v += c;
        j += 1;
      }
    }
    labels[name] = v;
    i = j + 1;
    if (i < text.length) {
      if (text[i] !== ',') throw new Error(`labels not separated by commas: ${line}`);
      i += 1;
    }
  }
  return labels;
}

function parse(text: string): Parsed {
  expect(text.endsWith('\n')).toBe(true);
  const lines = text.slice(0, -1).split('\n');
  expect(lines.at(-1)).toBe('# EOF');
  const families = new Map<string, { type: string; help: string }>();
  const samples: Sample[] = [];
  const series = new Set<string>();
  let current: string | undefined;
  let help: string | undefined;
  for (const line of lines.slice(0, -1)) {
    if (line.startsWith('# HELP ')) {
      const [, name, h] = /^# HELP (\S+) (.*)$/.exec(line) ?? [];
      if (!name || !NAME.test(name) || families.has(name)) throw new Error(`bad or repeated HELP: ${line}`);
      if (/\\[^\\n"]/.test(h!)) throw new Error(`bad escape in HELP: ${line}`);
      help = name;
      current = undefined;
      continue;
    }
    if (line.startsWith('# TYPE ')) {
      const [, name, type] = /^# TYPE (\S+) (\S+)$/.exec(line) ?? [];
      if (!name || name !== help) throw new Error(`TYPE not after its HELP: ${line}`);
      if (type !== 'gauge') throw new Error(`a type the textfile collector does not read as written here: ${line}`);
      families.set(name, { type, help: /^# HELP \S+ (.*)$/.exec(lines[lines.indexOf(line) - 1]!)![1]! });
      current = name;
      continue;
    }
    if (line.startsWith('#')) throw new Error(`a comment the writer does not write: ${line}`);
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not a sample (a timestamp, a blank line, a bad name?): ${line}`);
    const [, name, labelText, value] = m;
    if (name !== current) throw new Error(`a sample outside its family: ${line}`);
    if (!VALUE.test(value!)) throw new Error(`bad value: ${line}`);
    const labels = labelText === undefined ? {} : parseLabels(labelText, line);
    const key = `${name}${JSON.stringify(Object.entries(labels).sort())}`;
    if (series.has(key)) throw new Error(`a series twice: ${line}`);
    series.add(key);
    samples.push({ name: name!, labels, value: value === '+Inf' ? Infinity : value === '-Inf' ? -Infinity : Number(value) });
  }
  return { families, samples };
}

const find = (p: Parsed, name: string, labels: Record<string, string> = {}): Sample[] =>
  p.samples.filter((s) => s.name === `mapped_reg_${name}` && Object.entries(labels).every(([k, v]) => s.labels[k] === v));

describe('the strict parser used here', () => {
  it.each([
    ['no # EOF', 'mapped_reg_x 1\n'],
    ['a sample before its TYPE', '# HELP a h\nb 1\n# EOF\n'],
    ['a timestamp', '# HELP a h\n# TYPE a gauge\na 1 1700000000\n# EOF\n'],
    ['an unescaped quote', '# HELP a h\n# TYPE a gauge\na{l="x"y"} 1\n# EOF\n'],
    ['a series twice', '# HELP a h\n# TYPE a gauge\na{l="x"} 1\na{l="x"} 2\n# EOF\n'],
    ['a family split', '# HELP a h\n# TYPE a gauge\na 1\n# HELP a h\n# TYPE a gauge\na 2\n# EOF\n'],
  ])('refuses %s', (_what, text) => {
    expect(() => parse(text)).toThrow();
  });
});

describe('metricsText', () => {
  it('per device: the info metric with its labels, usable, the copy speeds in bytes/s, the checks by status; the gate; the run\'s time', () => {
    const r = fixture();
    const d = r.devices[0]!;
    const p = parse(metricsText(r));
    expect([...p.families.values()].every((f) => f.type === 'gauge' && f.help.length > 10)).toBe(true);
    expect(find(p, 'device_info')).toEqual([
      {
        name: 'mapped_reg_device_info',
        labels: { device: 'cuda:0', name: d.name, backend: 'cuda', pci_bus_id: d.pciBusId ?? '', driver: d.driver.name, driver_version: d.driver.version, verdict: 'Usable', refusal: '' },
        value: 1,
      },
    ]);
    expect(find(p, 'device_usable', { device: 'cuda:0' })[0]!.value).toBe(1);
    expect(find(p, 'device_registered_copy_bytes_per_second', { device: 'cuda:0' })[0]!.value).toBeCloseTo(d.timing!.registeredGBps * 1e9, 0);
    expect(find(p, 'device_staged_copy_bytes_per_second', { device: 'cuda:0' })[0]!.value).toBeCloseTo(d.timing!.stagedGBps * 1e9, 0);
    // a results file without the page-locked figure has no such series
    expect(p.families.has('mapped_reg_device_page_locked_copy_bytes_per_second')).toBe(false);
    const checks = find(p, 'device_checks', { device: 'cuda:0' });
    expect(checks.map((s) => s.labels.status).sort()).toEqual(['crash', 'error', 'fail', 'pass', 'skip', 'timeout', 'warn']);
    expect(checks.reduce((n, s) => n + s.value, 0)).toBe(d.checks.length);
    expect(find(p, 'device_checks', { device: 'cuda:0', status: 'pass' })[0]!.value).toBe(d.checks.filter((c) => c.status === 'pass').length);
    expect(find(p, 'gate_pass')[0]!.value).toBe(r.gate!.pass ? 1 : 0);
    expect(find(p, 'gate_reasons')[0]!.value).toBe(r.gate!.reasons.length);
    expect(find(p, 'run_finish_timestamp_seconds')[0]!.value).toBe(Date.parse(r.finishedAt) / 1000);
    expect(find(p, 'run_start_timestamp_seconds')[0]!.value).toBe(Date.parse(r.startedAt) / 1000);
    expect(find(p, 'run_duration_seconds')[0]!.value).toBeCloseTo((Date.parse(r.finishedAt) - Date.parse(r.startedAt)) / 1000, 3);
    expect(find(p, 'run_incomplete')[0]!.value).toBe(0);
  });

  it('the H200\'s run (schemaVersion 2) read by a real Prometheus text parser: every family, and the figures of the results', () => {
    const r = JSON.parse(readFileSync(join(ROOT, 'docs', 'results', 'h200-cuda13.0-580.159.04.json'), 'utf8')) as RunResult;
    const d = r.devices.find((x) => x.id === 'cuda:0')!;
    const fams = parsePrometheus(metricsText(r));
    const byName = new Map(fams.map((f) => [f.name, f]));
    const one = (name: string): number => Number(byName.get(`mapped_reg_${name}`)!.metrics.find((m) => m.labels?.device === 'cuda:0')!.value);
    expect(fams.every((f) => f.type === 'GAUGE')).toBe(true);
    expect(byName.get('mapped_reg_device_info')!.metrics.find((m) => m.labels?.device === 'cuda:0')!.labels).toMatchObject({ name: 'NVIDIA H200', pci_bus_id: '0000:00:06.0', verdict: 'Usable' });
    expect(one('device_registered_copy_bytes_per_second')).toBeCloseTo(d.timing!.registeredGBps * 1e9, -3);
    expect(one('device_page_locked_copy_bytes_per_second')).toBeCloseTo(d.timing!.pageLockedGBps! * 1e9, -3);
    expect(one('device_registered_to_page_locked_ratio')).toBeCloseTo(d.timing!.pageLockedRatio!, 9);
    expect(one('device_busy')).toBe(0);
  });

  it('the page-locked copy speed, where the results have it', () => {
    const r = fixture();
    (r.devices[0]!.timing as { pageLockedGBps?: number }).pageLockedGBps = 55.25;
    const p = parse(metricsText(r));
    expect(find(p, 'device_page_locked_copy_bytes_per_second', { device: 'cuda:0' }).map((s) => s.value)).toEqual([55.25e9]);
  });

  it('a refused device, a failing gate, a run without a gate (list): each as it is', () => {
    const r = fixture();
    const d = r.devices[0]!;
    d.verdict = { kind: 'Refused', refusal: 'Kernel_hazard', reason: 'r', text: 'Refused (Kernel_hazard (r))' };
    delete d.timing;
    r.gate!.pass = false;
    const p = parse(metricsText(r));
    expect(find(p, 'device_info')[0]!.labels).toMatchObject({ verdict: 'Refused', refusal: 'Kernel_hazard' });
    expect(find(p, 'device_usable')[0]!.value).toBe(0);
    expect(p.families.has('mapped_reg_device_registered_copy_bytes_per_second')).toBe(false);
    expect(find(p, 'gate_pass')[0]!.value).toBe(0);
    delete r.gate;
    expect(parse(metricsText(r)).families.has('mapped_reg_gate_pass')).toBe(false);
  });

  it('names from a driver are escaped and read back whole (quote, backslash, line feed, a brace)', () => {
    const r = fixture();
    const name = 'GPU "x" \\ y\n} z';
    r.devices[0]!.name = name;
    const p = parse(metricsText(r));
    expect(find(p, 'device_info')[0]!.labels.name).toBe(name);
    expect(escapeLabelValue(name)).toBe('GPU \\"x\\" \\\\ y\\n} z');
  });
});

describe('--metrics through the command', () => {
  const scratch = (): string => mkdtempSync(join(work, 'scratch-'));
  const cli = (args: string[]) => spawnSync(process.execPath, [MAIN, '--backend', 'cpu', '--scratch-dir', scratch(), ...args], { env: cleanEnv(), encoding: 'utf8', cwd: work });

  it('writes the file atomically, keeping the mode of the file it replaces, and leaves nothing else beside it', () => {
    const dir = join(work, 'textfile');
    mkdirSync(dir);
    const file = join(dir, 'mapped-reg.prom');
    writeFileSync(file, 'old\n');
    chmodSync(file, 0o640);
    const r = cli(['--metrics', file]);
    expect(r.status).toBe(0);
    const p = parse(readFileSync(file, 'utf8'));
    expect(find(p, 'device_info', { device: 'cpu' })[0]!.labels.verdict).toBe('Not_needed');
    expect(find(p, 'gate_pass')[0]!.value).toBe(1);
    expect(statSync(file).mode & 0o777).toBe(0o640);
    expect(readdirSync(dir)).toEqual(['mapped-reg.prom']);
  });

  it('an output that cannot be written is refused before anything runs: exit 2, one line, nothing written', () => {
    const r = cli(['--metrics', join(work, 'no-such-folder', 'm.prom'), '--json', join(work, 'never.json')]);
    expect(r.status).toBe(2);
    expect(r.stderr.trimEnd().split('\n')).toEqual([expect.stringMatching(/^mapped-reg-conformance: --metrics .*m\.prom: the folder .* does not exist$/)]);
    expect(r.stdout).toBe('');
    expect(() => statSync(join(work, 'never.json'))).toThrow();
  });

  it('--metrics and --json naming the same file: refused, exit 2', () => {
    const same = join(work, 'same.out');
    const r = cli(['--metrics', same, '--json', same]);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/--json and --metrics name the same file/);
  });
});

describe('docs/fleet.md', () => {
  const text = readFileSync(join(ROOT, 'docs', 'fleet.md'), 'utf8');
  // the H200's run of schemaVersion 2: the control copy and the look at the machine, where a run has them
  const written = new Set(parse(metricsText(JSON.parse(readFileSync(join(ROOT, 'docs', 'results', 'h200-cuda13.0-580.159.04.json'), 'utf8')) as RunResult)).families.keys());

  it('the collector path, and every metric the page names is one the reporter writes', async () => {
    expect(text).toMatch(/--collector\.textfile\.directory=\/var\/lib\/node_exporter\/textfile/);
    expect(text).toMatch(/--metrics \/var\/lib\/node_exporter\/textfile\/mapped-reg\.prom/);
    // and the same run gated against itself: the figures the gate decided with their noise
    const h200 = JSON.parse(readFileSync(join(ROOT, 'docs', 'results', 'h200-cuda13.0-580.159.04.json'), 'utf8')) as RunResult;
    const gated = parse(metricsText({ ...h200, gate: await decide(h200, { baseline: { file: 'h200.json', result: h200 } }) })).families;
    expect(gated.has('mapped_reg_gate_figure_outcome')).toBe(true);
    const all = new Set([...written, ...gated.keys()]);
    const named = new Set(text.match(/mapped_reg_[a-z_]+/g));
    expect(named.size).toBeGreaterThan(8);
    for (const m of named) expect(all, m).toContain(m);
    for (const m of all) expect(named, m).toContain(m);
  });

  it('the alerting rule is a Prometheus rule file in YAML with one alert', async () => {
    const { parseDocument } = await import('yaml');
    const block = /^```yaml\n(groups:[\s\S]*?)^```$/m.exec(text)![1]!;
    const doc = parseDocument(block, { strict: true, uniqueKeys: true });
    expect(doc.errors.map(String)).toEqual([]);
    const rules = (doc.toJS() as { groups: { name: string; rules: { alert: string; expr: string; for: string }[] }[] }).groups[0]!.rules;
    expect(rules).toHaveLength(1);
    expect(rules[0]!.alert).toMatch(/^[A-Za-z]+$/);
    expect(rules[0]!.expr).toMatch(/mapped_reg_gate_pass == 0/);
    expect(rules[0]!.for).toMatch(/^\d+[smh]$/);
  });
});
