// The runtimes side by side (results/runtime-matrix.ts) as the terminal, an HTML page and JUnit tell them: one row
// per runtime and device (a runtime that did not load or start: one row with its reason), then each candidate's
// decision against its baseline and the one PASS/FAIL line. JUnit: one <testsuite> per runtime and device, the
// runtime in its name, a <testcase> per check; one per runtime that has no device (`runtime.start`, red with
// its reason); and a testsuite `runtimes` with a <testcase> per candidate, red when it regressed.
import { createRequire } from 'node:module';
import type { Builder } from 'junit-report-builder';
import { checkReason } from '../results/check-text.js';
import { type MatrixRow, matrixHeadline, type RuntimeMatrix, type RuntimeRun } from '../results/runtime-matrix.js';
import { FAILING } from '../results/status.js';
import { escapeHtml, htmlPage } from './html-page.js';
import { xmlSafe } from './junit.js';
import { terminalSafe } from './safe-text.js';

const junit = createRequire(import.meta.url)('junit-report-builder') as Builder;

const API: Record<string, string> = { cuda: 'CUDA', hip: 'HIP' };
/** `rocm-7.2.4 (HIP 7.2.4)`. */
export const runtimeName = (r: Pick<MatrixRow, 'runtime' | 'backend' | 'version'>): string => `${r.runtime} (${API[r.backend] ?? r.backend}${r.version ? ` ${r.version}` : ''})`;

const gbps = (x: number | undefined): string => (x === undefined ? '-' : x.toFixed(2));
const ratio = (x: number | undefined): string => (x === undefined ? '-' : x.toFixed(3));

/** The cells of a row: runtime, role, device, verdict, registered GB/s, registered / page-locked, what did not pass. */
function cells(r: MatrixRow): string[] {
  const what = r.kind === 'device' ? (r.notPassed.length ? r.notPassed.join(', ') : '-') : (r.reason ?? r.kind);
  return [runtimeName(r), r.role, r.device ? `${r.device.id} ${r.device.name}` : '-', r.verdict ?? r.kind.toUpperCase(), gbps(r.registeredGBps), ratio(r.pageLockedRatio), what];
}

const HEAD = ['runtime', 'role', 'device', 'verdict', 'registered GB/s', 'reg/page-locked', 'not passed'];

/** The matrix as terminal lines (every text made safe for a terminal). */
export function matrixLines(m: RuntimeMatrix): string[] {
  const rows = m.rows.map(cells);
  const widths = HEAD.slice(0, -1).map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (r: string[]): string => terminalSafe(r.map((c, i) => (i < widths.length ? c.padEnd(widths[i]!) : c)).join('  '), false).trimEnd();
  const out = [line(HEAD), ...rows.map(line), ''];
  for (const c of m.candidates) {
    out.push(terminalSafe(`${c.runtime} against ${c.baseline}: ${c.pass ? 'at least as good' : 'REGRESSED'}`, false));
    for (const r of c.reasons) out.push(terminalSafe(`  - ${r}`, false));
  }
  out.push(matrixHeadline(m));
  return out;
}

/** The matrix as one self-contained HTML page. */
export function matrixHtml(m: RuntimeMatrix): string {
  const row = (r: string[], tag: string, cls = ''): string => `<tr${cls ? ` class="${cls}"` : ''}>${r.map((c) => `<${tag}>${escapeHtml(c)}</${tag}>`).join('')}</tr>`;
  const rowClass = (r: MatrixRow): string => (r.kind !== 'device' ? 'bad' : r.notPassed.length ? 'warn' : 'ok');
  const body = [
    `<p class="${m.pass ? 'ok' : 'bad'}">${escapeHtml(matrixHeadline(m))}</p>`,
    '<h2>Runtime × device</h2>',
    '<table>',
    row(HEAD, 'th'),
    ...m.rows.map((r) => row(cells(r), 'td', rowClass(r))),
    '</table>',
    '<h2>Candidates against their baseline</h2>',
    '<ul>',
    ...m.candidates.map((c) => `<li class="${c.pass ? 'ok' : 'bad'}">${escapeHtml(`${c.runtime} against ${c.baseline}: ${c.pass ? 'at least as good' : 'REGRESSED'}`)}${c.reasons.length ? `<ul>${c.reasons.map((x) => `<li>${escapeHtml(x)}</li>`).join('')}</ul>` : ''}</li>`),
    '</ul>',
  ];
  const style = 'table { border-collapse: collapse; } td, th { border: 1px solid #d0d7de; padding: 3px 6px; text-align: left; } tr.bad td { background: #ffebe9; } tr.warn td { background: #fff8c5; } .ok { color: #1a7f37; } .bad { color: #cf222e; }';
  return htmlPage({ title: 'mapped-reg-conformance: runtimes side by side', style, body });
}

type Suite = ReturnType<ReturnType<Builder['newBuilder']>['testSuite']>;

/** The matrix as JUnit XML (the checks read from each runtime's results). */
export function matrixJunit(m: RuntimeMatrix, runs: readonly RuntimeRun[], tool: string): string {
  const builder = junit.newBuilder().name(xmlSafe(tool));
  const props = (suite: Suite, r: RuntimeRun): void => {
    // the host in the suite's identity, as the run's JUnit has it: two hosts' matrices never merge
    // (a runtime that did not run has the host of the others: one machine ran them all)
    const hostname = r.result?.host.hostname ?? runs.find((x) => x.result)?.result?.host.hostname;
    const build = suite.build.bind(suite);
    suite.build = (parent) => {
      const element = build(parent);
      if (hostname !== undefined) element.att('hostname', xmlSafe(hostname));
      return element;
    };
    suite.property('runtime', xmlSafe(r.runtime.label));
    suite.property('runtimePath', xmlSafe(r.runtime.path));
    suite.property('runtimeVersion', xmlSafe(r.runtime.version ?? ''));
    suite.property('role', r.runtime.role);
  };
  for (const row of m.rows) {
    const run = runs.find((r) => r.runtime.label === row.runtime && r.runtime.backend === row.backend)!;
    const name = runtimeName(row);
    if (row.kind !== 'device') {
      const suite = builder.testSuite().name(xmlSafe(`runtime ${name} [${row.kind.toUpperCase()}]`));
      props(suite, run);
      suite.testCase().className(xmlSafe(`${row.runtime}.runtime`)).name('runtime.start').time(0).failure(xmlSafe(row.reason ?? row.kind), row.kind);
      continue;
    }
    const d = run.result!.devices.find((x) => x.id === row.device!.id)!;
    const suite = builder.testSuite().name(xmlSafe(`runtime ${name} ${d.id} ${d.name} [${row.verdict}]`)).timestamp(run.result!.startedAt);
    props(suite, run);
    suite.property('verdict', xmlSafe(row.verdict ?? ''));
    if (d.pciBusId) suite.property('pciBusId', xmlSafe(d.pciBusId));
    if (row.registeredGBps !== undefined) suite.property('registeredGBps', String(row.registeredGBps));
    if (row.pageLockedRatio !== undefined) suite.property('pageLockedRatio', String(row.pageLockedRatio));
    for (const c of d.checks) {
      const tc = suite.testCase().className(xmlSafe(`${row.runtime}.${d.id}.${c.suite}`)).name(xmlSafe(`${d.id} ${c.id}`)).time(Number.isFinite(c.durationMs) && c.durationMs > 0 ? c.durationMs / 1000 : 0);
      if ((FAILING as readonly string[]).includes(c.status)) tc.failure(xmlSafe(checkReason(c)), c.status);
      else if (c.status === 'error') tc.error(xmlSafe(checkReason(c)), 'host');
      else if (c.status === 'skip') tc.skipped();
    }
  }
  const suite = builder.testSuite().name(xmlSafe(`runtimes [${m.pass ? 'PASS' : 'FAIL'}]`));
  for (const c of m.candidates) {
    const tc = suite.testCase().className('runtimes').name(xmlSafe(`runtime ${c.runtime} against ${c.baseline}`)).time(0);
    if (!c.pass) tc.failure(xmlSafe(`${c.runtime} regressed against ${c.baseline}: ${c.reasons.join('; ')}`), 'regression');
  }
  if (m.candidates.length === 0) suite.testCase().className('runtimes').name('runtimes.candidates').time(0).skipped();
  // junit-10.xsd has no `skipped` on <testsuites> (only on <testsuite>): the builder writes it there
  return builder.build().replace(/^(<\?xml[^>]*>\s*<testsuites\b[^>]*?) skipped="\d+"/, '$1');
}
