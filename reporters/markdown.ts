// A GitHub-flavoured Markdown summary of a run (the command appends it to $GITHUB_STEP_SUMMARY): the gate's
// PASS/FAIL headline, a table of the devices (driver, verdict, bandwidths, check counts), the regressions and
// other reasons the gate is red (each with both sides and the PCI bus id), the known failures it excused, then
// the checks that failed, timed out or crashed and the errors outside any check. Text from drivers and checks is
// escaped: it renders as text, never as Markdown or HTML.
import type { CheckResult, DeviceResult, RunResult } from '../results/types.js';
import { notAskedLine } from '../results/compare.js';
import { FAILING } from '../results/status.js';
import { hostFaultMarkdown } from './host-faults.js';
import { markdownText } from './safe-text.js';
import { selectionSkips } from './selection.js';
import { twoDecimals as fixed } from '../results/format.js';

export { markdownText };

const count = (d: DeviceResult, ...statuses: CheckResult['status'][]): number => d.checks.filter((c) => statuses.includes(c.status)).length;

function row(cells: string[]): string {
  return `| ${cells.join(' | ')} |`;
}

/** The devices' table: a row a device. */
function deviceTable(result: RunResult): string[] {
  const out: string[] = [];
  out.push(row(['device', 'name', 'driver', 'verdict', 'registered GB/s', 'staged GB/s', 'ratio', 'passed', 'warned', 'failed', 'skipped']));
  out.push(row(['---', '---', '---', '---', '---:', '---:', '---:', '---:', '---:', '---:', '---:']));
  for (const d of result.devices) {
    const failed = count(d, ...FAILING);
    out.push(
      row([
        `\`${d.id.replace(/`/g, "'").replace(/\|/g, '\\|')}\``,
        markdownText(d.name),
        markdownText(`${d.driver.name} ${d.driver.version}`),
        markdownText(d.verdict.text) + (d.incomplete ? ' (incomplete)' : ''),
        fixed(d.timing?.registeredGBps),
        fixed(d.timing?.stagedGBps),
        fixed(d.timing?.ratio),
        String(count(d, 'pass')),
        String(count(d, 'warn')),
        failed > 0 ? `**${failed}**` : '0',
        String(count(d, 'skip')),
      ]),
    );
  }
  return out;
}

/** The run as GitHub-flavoured Markdown. */
export function markdownSummary(result: RunResult): string {
  const out: string[] = [];
  const host = `${result.host.hostname} (${result.host.platform}, kernel ${result.host.kernel})`;
  out.push(`### ${markdownText(`${result.tool.name} ${result.tool.version}`)} on ${markdownText(host)}`, '');
  if (result.gate) {
    // whose fault it is stays with the word: `**FAIL** (the host, not the driver): ...`
    const [, blame = '', rest = result.gate.headline] = /^(?:PASS|FAIL)( \([^)]*\))?: ([\s\S]*)$/.exec(result.gate.headline) ?? [];
    out.push(`**${result.gate.pass ? 'PASS' : 'FAIL'}**${markdownText(blame)}: ${markdownText(rest)}`, '');
  }
  if (result.incomplete) out.push('**Interrupted**: the run stopped before every check reported; what is missing was not run.', '');
  if (result.devices.length === 0) out.push('No device was found or selected.');
  else out.push(...deviceTable(result));
  const gate = result.gate;
  if (gate && gate.reasons.length > 0) {
    out.push('', `#### ${gate.baseline ? 'Regressions and other reasons' : 'Reasons'} the gate failed (${gate.reasons.length})`, '');
    for (const r of gate.reasons) out.push(`- ${r.kind === 'busy' ? '**host busy** ' : r.kind === 'noisy' ? '**host too noisy** ' : r.host ? '**host error** ' : ''}${markdownText(r.text)}`);
  }
  const notAsked = notAskedLine(gate?.notAskedFor);
  if (notAsked) out.push('', markdownText(notAsked));
  const excused = gate?.notes.filter((n) => n.kind === 'expected' || n.kind === 'flaky') ?? [];
  if (excused.length > 0) {
    out.push('', `#### Known failures and flakes (${excused.length})`, '');
    for (const n of excused) out.push(`- \`${n.device.replace(/`/g, "'")}\` **${markdownText(n.check)}** ${markdownText(`${n.kind}: ${n.note ?? ''}`)}`);
  }
  const failures: string[] = [];
  for (const d of result.devices) {
    // the checks the host failed (status error) are listed apart, below (reporters/host-faults.ts)
    for (const c of d.checks.filter((c) => FAILING.includes(c.status))) {
      const said = c.message ?? (c.expected !== undefined || c.observed !== undefined ? '' : 'no message');
      const eo = [c.expected !== undefined ? `expected ${c.expected}` : '', c.observed !== undefined ? `observed ${c.observed}` : ''].filter(Boolean).join('; ');
      const text = [said, eo].filter(Boolean).join(' — ');
      const note = gate?.notes.find((n) => n.device === d.id && n.check === c.id);
      const accepted = gate && !(note && ['regression', 'unexpected-pass', 'error'].includes(note.kind)) ? ` — accepted by the gate (${note?.kind === 'expected' ? 'known failure' : note?.kind === 'flaky' ? 'flaky' : 'failed in the baseline too'})` : '';
      failures.push(`- \`${d.id.replace(/`/g, "'")}\` **${markdownText(c.id)}** (${c.status}): ${markdownText(text)}${accepted}`);
    }
    for (const e of d.errors ?? []) failures.push(`- \`${d.id.replace(/`/g, "'")}\` **run error**: ${markdownText(e)}`);
  }
  if (failures.length > 0) out.push('', `#### Failing checks (${failures.length})`, '', ...failures);
  out.push(...hostFaultMarkdown(result)); // the checks the host failed, apart: they say nothing of the driver
  // the checks the selection left out (--check, --skip, --skips-file): skipped on every device, with the reason
  const skipped = selectionSkips(result);
  if (skipped.length > 0) {
    out.push('', `#### Checks skipped by the selection (${skipped.reduce((n, s) => n + s.ids.length, 0)})`, '');
    for (const s of skipped) out.push(`- ${s.ids.map((id) => `**${markdownText(id)}**`).join(', ')}: ${markdownText(s.reason)}`);
  }
  return `${out.join('\n')}\n`;
}
