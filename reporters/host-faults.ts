// The checks the host failed (status `error`: no scratch space, a process killed from outside), told apart from
// the driver's failures in the terminal summary and the step summary: the run does not pass, and it is the
// host's fault, not the driver's; and why each new process of a device was started, so that the summaries say
// which processes ran which checks. One function per output, called from one line each (cli/run.ts,
// reporters/markdown.ts).
import { plural } from '../results/format.js';
import type { DeviceResult, RunResult } from '../results/types.js';
import { markdownText } from './safe-text.js';

/** The host-failed checks of a device. */
const hostFailed = (d: DeviceResult) => d.checks.filter((c) => c.status === 'error');

/**
 * Terminal lines: per device, why each new process was started (a crash, a timeout, a kill), then, with host
 * faults, how many checks and the first reasons; none when there is nothing to say.
 */
export function hostFaultLines(devices: readonly DeviceResult[]): string[] {
  const lines: string[] = [];
  for (const d of devices) {
    for (const r of d.restarts ?? []) lines.push(`${d.id}: new process: ${r}`);
    const failed = hostFailed(d);
    if (failed.length === 0) continue;
    const reasons = [...new Set(failed.map((c) => c.message ?? 'no reason given'))];
    lines.push(
      `${d.id}: ${plural(failed.length, 'check')} could not run because of the host, not the driver (status error; the run does not pass): ${failed.map((c) => c.id).join(', ')}`,
      ...reasons.slice(0, 3).map((r) => `  ${r}`),
      ...(reasons.length > 3 ? [`  (and ${plural(reasons.length - 3, 'other reason')}: see the JSON results)`] : []),
    );
  }
  return lines;
}

/** Markdown lines for the step summary: the host-failed checks, then why each new process was started; none when nothing. */
export function hostFaultMarkdown(result: RunResult): string[] {
  const id = (d: DeviceResult): string => `\`${d.id.replace(/`/g, "'")}\``;
  const items = result.devices.flatMap((d) => hostFailed(d).map((c) => `- ${id(d)} **${markdownText(c.id)}** (error): ${markdownText(c.message ?? 'no reason given')}`));
  const restarts = result.devices.flatMap((d) => (d.restarts ?? []).map((r) => `- ${id(d)}: ${markdownText(r)}`));
  const out: string[] = [];
  if (items.length > 0) out.push('', `#### Not run because of the host, not the driver (${items.length})`, '', 'These checks could not judge the driver (status `error`): the run does not pass until the host is fixed.', '', ...items);
  if (restarts.length > 0) out.push('', `#### New processes (${restarts.length})`, '', ...restarts);
  return out;
}
