// Numbers as people write them on a command line: decimal (`256`, `0.8`, `.5`), with `%` where the number is a
// fraction (`10%` is 0.1). Nothing else: an empty or blank value, hex (`0x10`), an exponent (`1e308`), `Infinity`,
// `NaN`, a sign, and a value outside the option's range are refused in words, one line (`--size must be a positive
// whole number of MiB, not "abc"`), before anything runs. JavaScript's Number() would take most of these: '' and
// ' ' are 0 to it, '0x10' is 16.
import { UsageError } from './usage-error.js';

/** What an option's number must be. */
export interface NumberSpec {
  /** The option, as the user typed it: `--size`. */
  option: string;
  /** What it must be, in words, for the refusal: `a positive whole number of MiB`. */
  what: string;
  /** Whole numbers only. */
  whole?: boolean;
  /** The smallest value allowed; `above`: the value must be greater than `min`, not equal to it. */
  min: number;
  above?: boolean;
  /** The largest value allowed; `below`: the value must be smaller than `max`. */
  max: number;
  below?: boolean;
  /** A fraction: `10%` is also accepted, as 0.1. */
  percent?: boolean;
}

const DECIMAL = /^(?:\d+(?:\.\d*)?|\.\d+)$/;

/** The number `text` gives for `spec`, or a UsageError that says what the option must be and quotes what it got. */
export function parseNumber(text: string, spec: NumberSpec): number {
  const refuse = (): never => {
    throw new UsageError(`${spec.option} must be ${spec.what}, not ${JSON.stringify(text)}`);
  };
  const pct = spec.percent === true && text.endsWith('%');
  const digits = pct ? text.slice(0, -1) : text;
  if (!DECIMAL.test(digits)) return refuse();
  const x = Number(digits) / (pct ? 100 : 1);
  if (!Number.isFinite(x)) return refuse();
  if (spec.whole && !Number.isSafeInteger(x)) return refuse();
  if (spec.above ? x <= spec.min : x < spec.min) return refuse();
  if (spec.below ? x >= spec.max : x > spec.max) return refuse();
  return x;
}
