// A measurement, in the manner of nvbandwidth's test cases: a stable key (the field of the device's JSON it
// fills), a title (how the bench names it in progress and errors), a one-line description, whether it applies
// here, and run. The copy machinery is the session's (../session.ts); a measurement only times and records.
import { errorText } from '../../src/index.js';
import type { DeviceContext } from '../session.js';

export interface Measurement<C extends DeviceContext> {
  /** The field of the device's JSON it fills, e.g. `copies.registered` (docs/bench.md). */
  readonly key: string;
  /** Names it in `errors` when it throws: `<title>: <why>`. */
  readonly title: string;
  readonly description: string;
  /** False: it is not run, and its field stays out (what it needed, such as the page-locked buffer, is missing). */
  applies(c: C): boolean;
  /** Measures, and sets its key in c.result. */
  run(c: C): void;
}

/** Runs each measurement that applies, in order; one that throws is listed under the device's errors, and the next runs. */
export function measure<C extends DeviceContext>(c: C, list: readonly Measurement<C>[]): void {
  for (const m of list) {
    if (!m.applies(c)) continue;
    try {
      m.run(c);
    } catch (e) {
      c.result.errors.push(`${m.title}: ${errorText(e)}`);
    }
  }
}

export const always = (): boolean => true;
