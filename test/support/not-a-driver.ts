// A text file given as a driver library: each binding's loader must say so in one line, as NotADriverError.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { NotADriverError } from '../../bindings/errors.js';
import { thrown } from './thrown.js';

/** Writes a text file named `name` into `dir` and expects `load` of it to throw NotADriverError naming it, on one line. */
export function expectTextFileRefused(load: (library: string) => unknown, dir: string, name: string): void {
  const text = join(dir, name);
  writeFileSync(text, 'not an ELF file\n');
  const e = thrown(() => load(text)) as NotADriverError;
  expect(e).toBeInstanceOf(NotADriverError);
  expect(e.path).toBe(text);
  expect(e.message).toContain(text);
  expect(e.message).not.toContain('\n');
}
