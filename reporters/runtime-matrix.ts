// The runtimes side by side (results/runtime-matrix.ts) as the terminal, an HTML page and JUnit tell them: one row
// per runtime and device (a runtime that did not load or start: one row with its reason), then each candidate's
// decision against its baseline and the one PASS/FAIL line. JUnit: one <testsuite> per runtime and device, the
// runtime in its name, a <testcase> per check; one per runtime that has no device (`runtime.start`, red with
// its reason); and a testsuite `runtimes` with a <testcase> per candidate, red when it regressed.
import { type MatrixRow, matrixHeadline, type RuntimeMatrix, type RuntimeRun } from '../results/runtime-matrix.js';
import { escapeHtml, htmlPage } from './html-page.js';
import { junitReportXml } from './junit.js';
import { type JunitCase, type JunitSuite, checkOutcome, checksSeconds, seconds } from './junit-cases.js';
import { terminalSafe } from './safe-text.js';

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

/** The matrix as JUnit XML (the checks read from each runtime's results), written as the run's JUnit is. */
export function matrixJunit(m: RuntimeMatrix, runs: readonly RuntimeRun[], tool: string): string {
  // the host in each suite's identity, as the run's JUnit has it: two hosts' matrices never merge
  // (a runtime that did not run has the host of the others: one machine ran them all)
  const anyHost = runs.find((x) => x.result)?.result?.host.hostname ?? '';
  const started = runs.find((x) => x.result)?.result?.startedAt ?? new Date(0).toISOString();
  const runtimeProps = (r: RuntimeRun): [string, string][] => [
    ['runtime', r.runtime.label],
    ['runtimePath', r.runtime.path],
    ['runtimeVersion', r.runtime.version ?? ''],
    ['role', r.runtime.role],
  ];
  const suites: JunitSuite[] = [];
  for (const row of m.rows) {
    const run = runs.find((r) => r.runtime.label === row.runtime && r.runtime.backend === row.backend)!;
    const name = runtimeName(row);
    const hostname = run.result?.host.hostname ?? anyHost;
    if (row.kind !== 'device') {
      const reason = row.reason ?? row.kind;
      suites.push({
        name: `runtime ${name} [${row.kind.toUpperCase()}] on ${hostname}`,
        hostname,
        timestamp: run.result?.startedAt ?? started,
        time: 0,
        properties: runtimeProps(run),
        cases: [{ classname: `${row.runtime}.runtime`, name: `${row.runtime} > runtime.start`, time: 0, outcome: { element: 'failure', message: reason, type: row.kind, body: reason } }],
      });
      continue;
    }
    const d = run.result!.devices.find((x) => x.id === row.device!.id)!;
    const properties: [string, string][] = [...runtimeProps(run), ['verdict', row.verdict ?? '']];
    if (d.pciBusId) properties.push(['pciBusId', d.pciBusId]);
    if (row.registeredGBps !== undefined) properties.push(['registeredGBps', String(row.registeredGBps)]);
    if (row.pageLockedRatio !== undefined) properties.push(['pageLockedRatio', String(row.pageLockedRatio)]);
    // each check ends as in the run's own JUnit (reporters/junit-cases.ts): a crash or a timeout is an <error>, as there
    const cases: JunitCase[] = d.checks.map((c) => {
      const outcome = checkOutcome(c, undefined, undefined);
      return { classname: `${row.runtime}.${d.id}.${c.suite}`, name: `${row.runtime} ${d.id} > ${c.id}`, time: seconds(c.durationMs), ...(outcome ? { outcome } : {}) };
    });
    suites.push({ name: `runtime ${name} ${d.id} ${d.name} [${row.verdict}] on ${hostname}`, hostname, timestamp: run.result!.startedAt, time: checksSeconds(d.checks), properties, cases });
  }
  const decisions: JunitCase[] = m.candidates.map((c) => ({
    classname: 'runtimes',
    name: `runtimes > ${c.runtime} against ${c.baseline}`,
    time: 0,
    ...(c.pass ? {} : { outcome: { element: 'failure' as const, message: `${c.runtime} regressed against ${c.baseline}: ${c.reasons.join('; ')}`, type: 'regression' } }),
  }));
  if (decisions.length === 0) decisions.push({ classname: 'runtimes', name: 'runtimes > candidates', time: 0, outcome: { element: 'skipped', message: 'no candidate runtime' } });
  suites.push({ name: `runtimes [${m.pass ? 'PASS' : 'FAIL'}] on ${anyHost}`, hostname: anyHost, timestamp: started, time: 0, properties: [], cases: decisions });
  return junitReportXml({ name: tool, time: suites.reduce((a, s) => a + s.time, 0), suites });
}
