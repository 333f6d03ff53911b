// The bench's JSON (--json): the BenchResult as it is, pretty-printed, written atomically as the command's
// reports are.
import { writeAtomically } from '../../cli/outputs.js';
import type { BenchResult } from '../result.js';

export function renderJson(r: BenchResult): string {
  return `${JSON.stringify(r, null, 2)}\n`;
}

export function writeJson(file: string, r: BenchResult): void {
  writeAtomically(file, renderJson(r));
}
