// The native reference (docs/bench.md, "The native reference"): bench/native/staged.c built once per bench run
// with the machine's C compiler (or taken from --native-bin), and run per device on the bench's own scratch
// file, in its own process.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import type { DiscoveredDevice } from '../../bindings/discovery.js';
import type { Options } from '../bench-options.js';
import { root } from '../package.js';
import { say } from '../progress.js';
import type { DeviceBench, NativeJson, NativeResult } from '../result.js';

export interface NativeBinary {
  path?: string;
  how?: string;
  status: NativeResult['status'];
  message?: string;
  /** The temporary folder it was built in: removed by the caller once every device ran it. */
  dir?: string;
}

function compiler(): { cmd: string; args: string[] } {
  const words = (process.env.CC ?? '').trim().split(/\s+/).filter((w) => w !== '');
  const [cmd, ...args] = words.length ? words : ['cc'];
  return { cmd: cmd!, args };
}

/** Builds bench/native/staged.c into a temporary folder (or takes --native-bin when there is no compiler). */
export function buildNative(o: Options): NativeBinary {
  const source = join(root, 'bench', 'native', 'staged.c');
  const cc = compiler();
  const fallback = (why: string): NativeBinary =>
    o.nativeBin ? { status: 'ran', path: o.nativeBin, how: `--native-bin (${why})` } : { status: 'no-compiler', message: `${why}: the native reference was not built` };
  if (!existsSync(source)) return fallback(`no ${source}`);
  const dir = mkdtempSync(join(tmpdir(), 'mapped-reg-bench-'));
  const out = join(dir, 'staged');
  const r = spawnSync(cc.cmd, [...cc.args, '-O2', '-o', out, source, '-ldl'], { encoding: 'utf8' });
  if (r.error && (r.error as NodeJS.ErrnoException).code === 'ENOENT') {
    rmSync(dir, { recursive: true, force: true });
    return fallback(`no C compiler ('${cc.cmd}' not found)`);
  }
  if (r.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    return { status: 'build-failed', message: `${cc.cmd} failed: ${`${r.stderr ?? ''}${r.stdout ?? ''}`.trim().split('\n').slice(0, 5).join(' | ') || r.error?.message}` };
  }
  return { status: 'ran', path: out, how: `${[cc.cmd, ...cc.args].join(' ')} -O2 bench/native/staged.c -ldl`, dir };
}

/** Runs the native reference for one device on `file`, and sets the bench's figures of that device beside it. */
export function runNative(b: NativeBinary, d: DiscoveredDevice, o: Options, file: string, bench: DeviceBench): NativeResult {
  if (!b.path) return { status: b.status, ...(b.message ? { message: b.message } : {}) };
  const n = d.native!;
  say(`${d.id}: native reference (${basename(b.path)})`);
  const args = ['--json', '--api', n.api.toLowerCase(), '--device', String(n.ordinal), ...(bench.registerFlags !== undefined ? ['--flags', String(bench.registerFlags)] : []), file, String(o.sizeMiB), String(o.runs)];
  const r = spawnSync(b.path, args, { encoding: 'utf8', timeout: 600_000 });
  const binary = { path: b.path, how: b.how ?? '' };
  if (r.status !== 0) {
    const why = r.error?.message ?? (r.signal ? `killed by ${r.signal}` : `exit ${r.status}`);
    return { status: 'failed', binary, message: `${why}${r.stderr?.trim() ? `: ${r.stderr.trim().split('\n').slice(-3).join(' | ')}` : ''}` };
  }
  let raw: NativeJson;
  try {
    raw = JSON.parse(r.stdout.trim().split('\n').pop() ?? '') as NativeJson;
  } catch {
    return { status: 'failed', binary, message: `unreadable output: ${r.stdout.slice(0, 200)}` };
  }
  const reg = raw.results.registered?.gbps;
  const staged = raw.results.staged?.gbps;
  return {
    status: 'ran',
    binary,
    ...(reg !== undefined ? { registeredGBps: reg } : {}),
    ...(staged !== undefined ? { stagedGBps: staged } : {}),
    ...(reg && bench.copies.registered ? { registeredRatio: bench.copies.registered.bestGBps / reg } : {}),
    ...(staged && bench.copies.staged ? { stagedRatio: bench.copies.staged.bestGBps / staged } : {}),
    raw,
  };
}
