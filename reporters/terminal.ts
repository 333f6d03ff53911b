// What the terminal shows of a run as it goes: what the discovery found (discoveryLines), then progress while the
// checks run (Progress). On a terminal: one status line per device, redrawn in place (checks done, the one
// running, counts, elapsed time), with every check that did not pass printed for good above them. Not on a
// terminal (CI logs, pipes): one plain line per check result, except skips: a device's skipped checks are told
// once, when the device is done, a line per reason (a device that never registers skips 32 of its 33 checks),
// and a check still running is told every STILL_RUNNING_S seconds (a log would otherwise be silent until it ends).
import type { PlainDevice, PlainDiscovery } from '../bindings/discovery.js';
import { checkDetail } from '../results/check-text.js';
import { plural } from '../results/format.js';
import { type CheckStatus, FAILING } from '../results/status.js';
import { type Look, type Paint, paintStatus, plain, wrap } from './look.js';
import { terminalSafe } from './safe-text.js';

export interface ProgressEvent {
  type: string;
  id?: string;
  status?: CheckStatus;
  observed?: string;
  message?: string;
}

interface DeviceState {
  done: number;
  running?: string;
  /** The last check that reported: between two checks, the status line says what came last. */
  last?: string;
  /** When the running check started (performance.now()), and how many still-running lines it has had. */
  since?: number;
  told?: number;
  counts: Record<CheckStatus, number>;
  finished: boolean;
  /** Not on a terminal: the skipped checks not yet told, by reason. */
  skipped: Map<string, string[]>;
}

/** The status line's counts painted: a failure red, a host error magenta, a warning yellow (a zero stays plain). */
const paintCounts = (paint: Paint, line: string): string =>
  line.replace(/(?<= )[1-9]\d* (fail|host error|warn)\b/g, (all, what: string) => paint(all, what === 'fail' ? 'fail' : what === 'host error' ? 'host' : 'warn'));

/** Not on a terminal: seconds between the lines that tell a check is still running. */
export const STILL_RUNNING_S = 10;

const emptyCounts = (): Record<CheckStatus, number> => ({ pass: 0, warn: 0, fail: 0, timeout: 0, crash: 0, error: 0, skip: 0 });

export class Progress {
  readonly #devices = new Map<string, DeviceState>();
  readonly #t0 = performance.now();
  #drawn = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly write: (text: string) => void,
    private readonly tty: boolean,
    devices: string[],
    private readonly stillRunningS: number = STILL_RUNNING_S,
    private readonly look: Look = {},
  ) {
    for (const d of devices) this.#devices.set(d, { done: 0, counts: emptyCounts(), finished: false, skipped: new Map() });
    if (tty) {
      this.#draw();
      this.#timer = setInterval(() => this.#draw(), 250);
    } else {
      this.#timer = setInterval(() => this.#tellStillRunning(), 1000);
    }
    this.#timer.unref();
  }

  /** Not on a terminal: a line for each check that has run another `stillRunningS` seconds since it was last told. */
  #tellStillRunning(): void {
    const now = performance.now();
    for (const [device, s] of this.#devices) {
      if (s.running === undefined || s.since === undefined) continue;
      const told = s.told ?? 0;
      const periods = Math.floor((now - s.since) / 1000 / this.stillRunningS);
      if (periods <= told) continue;
      s.told = periods;
      this.#line(`  [${this.#elapsed()}] ${device} ${s.running} still running (${periods * this.stillRunningS} s)`);
    }
  }

  #elapsed(): string {
    return `${((performance.now() - this.#t0) / 1000).toFixed(1)} s`;
  }

  /**
   * A status line cut to the terminal's width (less one column): a redrawn line must never wrap, or moving the
   * cursor up by the lines drawn would leave some of them behind.
   */
  #fit(line: string): string {
    const width = this.look.width;
    return width !== undefined && line.length >= width ? `${line.slice(0, Math.max(width - 2, 1))}…` : line;
  }

  /** A line printed for good (above the status block on a terminal). */
  #line(text: string): void {
    if (this.tty) {
      this.#clear();
      // wrapped at words within the width (a colour's escape counted as width: a line may wrap a little early)
      this.write(`${wrap(text, this.look.width).join('\n')}\n`);
      this.#draw();
    } else {
      this.write(`${text}\n`);
    }
  }

  #clear(): void {
    if (this.#drawn > 0) this.write(`\x1b[${this.#drawn}A\x1b[0J`);
    this.#drawn = 0;
  }

  #draw(): void {
    this.#clear();
    const width = Math.max(...[...this.#devices.keys()].map((d) => d.length), 6);
    const paint = this.look.paint ?? plain;
    const lines = [...this.#devices].map(([device, s]) => {
      const c = s.counts;
      const failing = FAILING.reduce((n, status) => n + c[status], 0);
      // between two checks (a new process starting, the timing lock, quiet awaited), what came last
      const what = s.finished ? 'done' : (s.running ?? (s.last ? `after ${s.last}` : 'waiting for its first check'));
      const line = `  ${device.padEnd(width)}  ${plural(s.done, 'check').padStart(10)}  ${c.pass} pass  ${c.warn} warn  ${failing} fail  ${c.skip} skip${c.error ? `  ${c.error} host error` : ''}  ${what}`;
      return paintCounts(paint, this.#fit(line));
    });
    lines.push(`  ${this.#elapsed()}`);
    this.write(`${lines.join('\n')}\n`);
    this.#drawn = lines.length;
  }

  event(device: string, e: ProgressEvent): void {
    const s = this.#devices.get(device);
    if (!s) return;
    if (e.type === 'start' && e.id) {
      s.running = e.id;
      s.since = performance.now();
      s.told = 0;
    } else if (e.type === 'result' && e.id && e.status) {
      s.done += 1;
      s.counts[e.status] += 1;
      s.last = e.id;
      if (s.running === e.id) delete s.running;
      if (e.status === 'skip') {
        // on a terminal the status line counts them; in a log they are told when the device is done
        if (this.tty) this.#draw();
        else {
          const reason = e.message ?? '';
          s.skipped.set(reason, [...(s.skipped.get(reason) ?? []), e.id]);
        }
        return;
      }
      // the check's plain words beside its codes (results/check-text.ts: what JUnit says of it too)
      const detail = terminalSafe(checkDetail({ status: e.status, ...(e.message !== undefined ? { message: e.message } : {}), ...(e.observed !== undefined ? { observed: e.observed } : {}) }) ?? '', false);
      const text = `  [${this.#elapsed()}] ${device} ${e.id} ${paintStatus(this.look.paint ?? plain, e.status, e.status)}${detail ? ` - ${detail}` : ''}`;
      // on a terminal only what did not pass stays on screen; in a log every check has its line
      if (!this.tty || e.status !== 'pass') this.#line(text);
      else this.#draw();
    } else if (e.type === 'error' && e.message) {
      this.#line(`  ${device} error: ${terminalSafe(e.message, false)}`);
    } else if (e.type === 'restart' && e.message) {
      this.#line(`  [${this.#elapsed()}] ${device} new process: ${terminalSafe(e.message, false)}`);
    } else if (e.type === 'end') {
      s.finished = true;
      this.#tellSkipped(device, s);
      if (this.tty) this.#draw();
    }
  }

  /** The skipped checks of a device not yet told: one line per reason (the check's id when it is the only one). */
  #tellSkipped(device: string, s: DeviceState): void {
    for (const [reason, ids] of s.skipped) {
      const what = ids.length === 1 ? `${ids[0]} skip` : `${plural(ids.length, 'check')} skip`;
      this.#line(`  [${this.#elapsed()}] ${device} ${what}${reason ? ` - ${terminalSafe(reason, false)}` : ''}`);
    }
    s.skipped.clear();
  }

  /** Stops redrawing; the status block stays as the last state. */
  finish(): void {
    if (this.#timer) clearInterval(this.#timer);
    for (const [device, s] of this.#devices) this.#tellSkipped(device, s);
    if (this.tty) {
      for (const s of this.#devices.values()) s.finished = true;
      this.#draw();
    }
  }
}

/** What the discovery found, before the checks: its time, each backend, each device selected. */
export function discoveryLines(d: {
  ms: number;
  /** Each discovering process that reported: its backends and how long it took. */
  inProcesses: { backends: readonly string[]; ms: number }[];
  found: PlainDiscovery;
  selected: readonly PlainDevice[];
  /** Stopped by a signal: no word on a missing GPU driver. */
  interrupted: boolean;
}): string[] {
  const processes = d.inProcesses.map((p) => `${p.backends.join('+')} ${p.ms.toFixed(0)} ms`);
  const out = [`discovery (${d.ms.toFixed(0)} ms${processes.length ? `; in their processes: ${processes.join(', ')}` : ''}):`];
  for (const b of d.found.backends) {
    const what = b.backend === 'cpu' ? 'the host CPU' : b.library ? `${b.library}, ${plural(b.devices, 'device')}` : 'no library';
    out.push(`  ${b.backend}: ${what}${b.note ? ` - ${b.note}` : ''}`);
  }
  for (const s of d.selected) {
    const attrs = s.attributes ? ` ${Object.entries(s.attributes).map(([k, v]) => `${k}=${v}`).join(' ')}` : '';
    const mem = s.totalMemBytes ? `, ${(s.totalMemBytes / 2 ** 30).toFixed(1)} GiB` : '';
    // whether a GPU is integrated means nothing for a CPU device (the host CPU, PoCL, llvmpipe): not "unknown"
    const kind = s.type === 'cpu' && s.integrated === null && !s.integratedError ? 'a CPU' : `integrated=${s.integrated ?? `unknown${s.integratedError ? ` (${s.integratedError})` : ''}`}`;
    out.push(`  ${s.id}: ${s.name} [${s.driver.name} ${s.driver.version}${s.pciBusId ? `, ${s.pciBusId}` : ''}${mem}] ${kind}${attrs}`);
  }
  if (!d.found.gpuDriverFound && !d.interrupted) out.push(`  no GPU driver was found (neither CUDA nor HIP): ${d.selected.length ? 'only the devices above are checked' : 'no device to check'}`);
  return out;
}
