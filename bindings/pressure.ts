// The kernel's pressure stall information (PSI): the share of the last 10 seconds in which some (or all) tasks
// waited for a CPU or for memory. A machine busy with other work shows it here. A kernel without PSI (or a
// container that hides it) has no files: that is a note, never an error. The files are read without blocking
// (bindings/small-file.ts): one that is not a regular file (a named pipe in its place) is a note, never a hang.
import { readSmallFile } from './small-file.js';

export interface Pressure {
  /** `some avg10` of /proc/pressure/cpu, in percent; null when the file cannot be read. */
  cpu: { someAvg10: number } | null;
  /** `some avg10` and `full avg10` of /proc/pressure/memory, in percent; null when the file cannot be read. */
  memory: { someAvg10: number; fullAvg10: number } | null;
  /** Why a figure is null. */
  note?: string;
}

/** The folder of the pressure files: env MAPPED_REG_PROC_ROOT + '/pressure', else /proc/pressure. */
export function pressureRoot(): string {
  const proc = process.env.MAPPED_REG_PROC_ROOT;
  return proc ? `${proc}/pressure` : '/proc/pressure';
}

/**
 * The avg10 of each line of a pressure file (`some avg10=0.00 avg60=0.00 avg300=0.00 total=0`), by the line's
 * first word; a line of another shape is left out.
 */
export function parsePressure(text: string): Map<string, number> {
  const avg10 = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^(some|full)\s+avg10=(\d+(?:\.\d+)?)\s/.exec(line.trim() + ' ');
    // a share of 10 seconds, in percent: anything above 100 (or too long to be a number) is not the kernel's
    if (m && Number(m[2]) <= 100) avg10.set(m[1]!, Number(m[2]));
  }
  return avg10;
}

/** A pressure file's avg10 figures, or why there are none. */
function readAvg10(path: string): Map<string, number> | string {
  const read = readSmallFile(path);
  if ('reason' in read) return `${path}: ${read.code === 'ENOENT' ? 'no such file (a kernel without PSI?)' : `cannot be read (${read.reason})`}`;
  const avg10 = parsePressure(read.text);
  return avg10.size > 0 ? avg10 : `${path}: not in the kernel's format`;
}

/**
 * /proc/pressure/{cpu,memory} (or those of `root`). Never throws, never blocks: a file that cannot be read is null
 * (unknown in the results), with a note.
 */
export function readPressure(root = pressureRoot()): Pressure {
  const notes: string[] = [];
  const cpuAvg = readAvg10(`${root}/cpu`);
  const memAvg = readAvg10(`${root}/memory`);
  let cpu: Pressure['cpu'] = null;
  let memory: Pressure['memory'] = null;
  if (typeof cpuAvg === 'string') notes.push(cpuAvg);
  else if (cpuAvg.has('some')) cpu = { someAvg10: cpuAvg.get('some')! };
  else notes.push(`${root}/cpu: no "some" line`);
  if (typeof memAvg === 'string') notes.push(memAvg);
  else if (memAvg.has('some') && memAvg.has('full')) memory = { someAvg10: memAvg.get('some')!, fullAvg10: memAvg.get('full')! };
  else notes.push(`${root}/memory: no "some" and "full" lines`);
  return notes.length > 0 ? { cpu, memory, note: notes.join('; ') } : { cpu, memory };
}
