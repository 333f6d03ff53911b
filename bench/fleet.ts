// A simulated fleet for the history store: N hosts of 8 GPUs each, one results file per host and per
// driver version, as `mapped-reg-conformance --json` writes them, and the regressions it planted (truth.json).
//
// Each host's file starts from a real one (the two-H200 run of docs/results/, pretty-printed as `run` writes it):
// 8 CUDA devices made from its cuda:0 (PCI bus ids of an 8-GPU HGX board, registered and staged GB/s varied
// around the measured ones), and its CPU device. The old side runs driver OLD_DRIVER, the
// new side NEW_DRIVER, a day later. On the new side, chosen hosts (seeded, so the same options write the same
// fleet) get one planted regression each:
//   bandwidth  one GPU's registered GB/s down 25%
//   status     one GPU's hazard.tmpfs_bytes pass -> fail
//   verdict    one GPU's verdict Usable -> Refused (Wrong_bytes), its probe.verdict failing
//   missing    one GPU gone (7 CUDA devices)
//   gone       the CUDA driver fails to start (cuInit 999): no CUDA device at all
// and `notUpgraded` hosts have no new-side file (a rollout that has not reached them: not missing).
//
//   node dist/bench/fleet.js --hosts 1000 --out /tmp/fleet      (npm run bench:fleet -- --hosts 1000 --out ...)
// writes /tmp/fleet/old/results-<host>.json, /tmp/fleet/new/results-<host>.json and /tmp/fleet/truth.json.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CheckResult, DeviceResult, RunResult } from '../results/types.js';
import { PROBE_VERDICT } from '../suites/checks/data.js';

export const OLD_DRIVER = { name: 'CUDA', version: '13.0 (kernel module 580.159.04)' };
export const NEW_DRIVER = { name: 'CUDA', version: '13.1 (kernel module 590.44.01)' };
/** The PCI bus ids of the 8 GPUs of an HGX H200 board. */
export const BUS_IDS = ['0000:18:00.0', '0000:2a:00.0', '0000:3a:00.0', '0000:5d:00.0', '0000:9a:00.0', '0000:ab:00.0', '0000:ba:00.0', '0000:db:00.0'];
export const PLANTED_KINDS = ['bandwidth', 'status', 'verdict', 'missing', 'gone'] as const;
export type PlantedKind = (typeof PLANTED_KINDS)[number];

export interface FleetOptions {
  hosts: number;
  out: string;
  seed?: number;
  /** Hosts with each planted regression (default: 1 in 200 hosts for bandwidth, 1 in 400 for status, 1 in 1000 for the others, at least 1 each). */
  planted?: Partial<Record<PlantedKind, number>>;
  /** Hosts with no new-side file (default 0). */
  notUpgraded?: number;
  /** The first host's number (default 1): a second call with another start adds other hosts. */
  firstHost?: number;
  /** Keep the CPU device of each run (default true). */
  cpu?: boolean;
}

export interface Planted {
  kind: PlantedKind;
  host: string;
  /** The GPU (none for `gone`: every CUDA device). */
  pciBusId?: string;
  check?: string;
}

export interface FleetTruth {
  hosts: number;
  files: { old: number; new: number };
  bytes: number;
  oldDriver: string;
  newDriver: string;
  planted: Planted[];
  notUpgraded: string[];
}

const TEMPLATE_NAME = 'h200x2-cuda13.0-580.159.04.json';
/** The new side runs a day after the old. */
const DAY_MS = 86_400_000;

/** The real results file the hosts are made from (docs/results/, beside dist/ or this source). */
function template(): RunResult {
  const candidates = ['../../docs/results/', '../docs/results/'].map((p) => fileURLToPath(new URL(p + TEMPLATE_NAME, import.meta.url)));
  const found = candidates.find((p) => existsSync(p));
  if (!found) throw new Error(`${TEMPLATE_NAME} not found (looked at ${candidates.join(', ')})`);
  return JSON.parse(readFileSync(found, 'utf8')) as RunResult;
}

/** mulberry32: a small seeded generator of [0, 1), so that the same options write the same fleet (test/support's noise
 * model draws from it too). */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const hostName = (n: number): string => `gpu-node-${String(n).padStart(5, '0')}`;

const clone = <T>(x: T): T => JSON.parse(JSON.stringify(x)) as T;

type Side = 'old' | 'new';

/** Which hosts get each planted regression (hosts of their own, drawn without repeats), and which are not upgraded. */
function drawHosts(hosts: readonly string[], o: FleetOptions, rnd: () => number): { plantedOn: Map<string, PlantedKind>; notUpgraded: Set<string> } {
  const order = hosts.slice();
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  const defaults: Record<PlantedKind, number> = {
    bandwidth: Math.max(1, Math.round(o.hosts / 200)),
    status: Math.max(1, Math.round(o.hosts / 400)),
    verdict: Math.max(1, Math.round(o.hosts / 1000)),
    missing: Math.max(1, Math.round(o.hosts / 1000)),
    gone: Math.max(1, Math.round(o.hosts / 1000)),
  };
  const plantedOn = new Map<string, PlantedKind>();
  let next = 0;
  for (const kind of PLANTED_KINDS) {
    const n = o.planted?.[kind] ?? defaults[kind];
    for (let k = 0; k < n && next < order.length; k++) plantedOn.set(order[next++]!, kind);
  }
  return { plantedOn, notUpgraded: new Set(order.slice(next, next + (o.notUpgraded ?? 0))) };
}

/** A host of the fleet: its kernel, and each GPU's figures, the same on both sides but for the noise of a run. */
interface FleetHost {
  name: string;
  kernel: string;
  registered: number[];
  staged: number[];
}

/** What each side's files are made from: the template's run, its cuda:0 and the devices kept beside the GPUs. */
interface Template {
  base: RunResult;
  gpu: DeviceResult;
  others: DeviceResult[];
}

/** The host's GPUs on one side, made from the template's cuda:0, with the side's planted regression on `victim`. */
function gpuDevices(gpu: DeviceResult, h: FleetHost, driver: DeviceResult['driver'], planted: PlantedKind | undefined, victim: number, rnd: () => number): DeviceResult[] {
  const devices: DeviceResult[] = [];
  BUS_IDS.forEach((bus, k) => {
    if (planted === 'missing' && k === victim) return;
    const d = clone(gpu);
    d.id = `cuda:${devices.length}`;
    d.pciBusId = bus;
    d.driver = { ...driver };
    d.scratch = { ...d.scratch, dir: '/local/scratch' };
    const noise = 1 + (rnd() - 0.5) * 0.02;
    const reg = h.registered[k]! * noise * (planted === 'bandwidth' && k === victim ? 0.75 : 1);
    const stg = h.staged[k]! * (1 + (rnd() - 0.5) * 0.3);
    d.timing = { ...d.timing!, registeredGBps: reg, stagedGBps: stg, ratio: reg / stg };
    for (const c of d.checks) c.durationMs = c.durationMs * (0.8 + rnd() * 0.4);
    if (planted === 'status' && k === victim) fail(d.checks, 'hazard.tmpfs_bytes', 'register 0; bytes differ at offset 0 (zeros); unregister 0');
    if (planted === 'verdict' && k === victim) {
      d.verdict = { kind: 'Refused', refusal: 'Wrong_bytes', reason: 'window 2: bytes differ at offset 4096', text: 'Refused (Wrong_bytes (window 2: bytes differ at offset 4096))' } as DeviceResult['verdict'];
      fail(d.checks, PROBE_VERDICT, 'Refused (Wrong_bytes); window 1: bytes equal, window 2: bytes differ at offset 4096');
    }
    devices.push(d);
  });
  return devices;
}

/** The CUDA backend's report on a side: no device at all where the driver is `gone`, else the GPUs kept. */
function cudaBackends(backends: RunResult['backends'], planted: PlantedKind | undefined, devices: readonly DeviceResult[]): RunResult['backends'] {
  return (backends ?? []).map((b) =>
    b.backend !== 'cuda'
      ? b
      : planted === 'gone'
        ? { backend: 'cuda', library: 'libcuda.so.1', devices: 0, initError: { message: 'cuInit returned 999 CUDA_ERROR_UNKNOWN', call: 'cuInit', code: 999, codeName: 'CUDA_ERROR_UNKNOWN' } }
        : { ...b, devices: devices.filter((d) => d.backend === 'cuda').length },
  );
}

/** Host number `i`'s run on one side (its start `startMs`), and what was planted in it. */
function sideRun(t: Template, h: FleetHost, i: number, side: Side, planted: PlantedKind | undefined, startMs: number, rnd: () => number): { run: RunResult; planted?: Planted } {
  const driver = side === 'old' ? OLD_DRIVER : NEW_DRIVER;
  const started = startMs + (side === 'new' ? DAY_MS : 0) + i * 7_000 + Math.floor(rnd() * 5_000);
  const victim = Math.floor(rnd() * BUS_IDS.length);
  const r = clone(t.base);
  r.host = { hostname: h.name, kernel: h.kernel, platform: 'linux-x64' };
  r.startedAt = new Date(started).toISOString();
  r.finishedAt = new Date(started + 3_000 + Math.floor(rnd() * 2_000)).toISOString();
  r.options = { ...r.options, scratchDir: '/local/scratch' };
  delete r.gate;
  const devices = planted === 'gone' ? [] : gpuDevices(t.gpu, h, driver, planted, victim, rnd);
  const truth: Planted | undefined =
    planted === 'gone' ? { kind: 'gone', host: h.name } : planted ? { kind: planted, host: h.name, pciBusId: BUS_IDS[victim]!, ...(planted === 'status' ? { check: 'hazard.tmpfs_bytes' } : {}) } : undefined;
  for (const d of t.others) {
    const c = clone(d);
    if (c.backend === 'cpu') c.driver = { ...c.driver, version: `Linux ${h.kernel}` };
    devices.push(c);
  }
  r.devices = devices;
  r.backends = cudaBackends(r.backends, planted, devices);
  return { run: r, ...(truth ? { planted: truth } : {}) };
}

/** Writes the fleet; returns what was planted. */
export function generateFleet(o: FleetOptions): FleetTruth {
  const rnd = random(o.seed ?? 16);
  const base = template();
  const t: Template = { base, gpu: base.devices.find((d) => d.id === 'cuda:0')!, others: o.cpu === false ? [] : base.devices.filter((d) => d.backend === 'cpu') };
  const first = o.firstHost ?? 1;
  const hosts = Array.from({ length: o.hosts }, (_, i) => hostName(first + i));
  const { plantedOn, notUpgraded } = drawHosts(hosts, o, rnd);
  mkdirSync(join(o.out, 'old'), { recursive: true });
  mkdirSync(join(o.out, 'new'), { recursive: true });
  const truth: FleetTruth = { hosts: o.hosts, files: { old: 0, new: 0 }, bytes: 0, oldDriver: OLD_DRIVER.version, newDriver: NEW_DRIVER.version, planted: [], notUpgraded: [...notUpgraded].sort() };
  const startMs = Date.parse('2026-12-01T00:00:00.000Z');
  hosts.forEach((name, i) => {
    const h: FleetHost = { name, kernel: `6.8.0-${40 + (i % 7)}-generic`, registered: BUS_IDS.map(() => 54 + rnd() * 1.4), staged: BUS_IDS.map(() => 6 + rnd() * 2.5) };
    for (const side of ['old', 'new'] as const) {
      if (side === 'new' && notUpgraded.has(name)) continue;
      const { run, planted } = sideRun(t, h, i, side, side === 'new' ? plantedOn.get(name) : undefined, startMs, rnd);
      if (planted) truth.planted.push(planted);
      const text = `${JSON.stringify(run, null, 2)}\n`;
      writeFileSync(join(o.out, side, `results-${name}.json`), text);
      truth.files[side]++;
      truth.bytes += Buffer.byteLength(text);
    }
  });
  writeFileSync(join(o.out, 'truth.json'), `${JSON.stringify(truth, null, 2)}\n`);
  return truth;
}

function fail(checks: CheckResult[], id: string, observed: string): void {
  const c = checks.find((x) => x.id === id);
  if (!c) throw new Error(`the template has no check ${id}`);
  c.status = 'fail';
  c.observed = observed;
}

// ---- the command ----

function main(argv: string[]): void {
  const value = (name: string): string | undefined => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  if (argv.includes('--help') || !value('--hosts') || !value('--out')) {
    process.stderr.write(
      'usage: node dist/bench/fleet.js --hosts N --out DIR [--seed S] [--not-upgraded N] [--first-host N]\n' +
        '  writes DIR/old/results-<host>.json (driver 13.0), DIR/new/results-<host>.json (driver 13.1) and DIR/truth.json\n',
    );
    process.exit(argv.includes('--help') ? 0 : 2);
  }
  const hosts = Number(value('--hosts'));
  if (!Number.isInteger(hosts) || hosts < 1) {
    process.stderr.write(`fleet: --hosts must be a whole number of at least 1, not ${value('--hosts')}\n`);
    process.exit(2);
  }
  const t0 = performance.now();
  const truth = generateFleet({
    hosts,
    out: value('--out')!,
    ...(value('--seed') ? { seed: Number(value('--seed')) } : {}),
    ...(value('--not-upgraded') ? { notUpgraded: Number(value('--not-upgraded')) } : {}),
    ...(value('--first-host') ? { firstHost: Number(value('--first-host')) } : {}),
  });
  const counts = PLANTED_KINDS.map((k) => `${truth.planted.filter((p) => p.kind === k).length} ${k}`).join(', ');
  process.stdout.write(
    `fleet: ${truth.hosts} hosts, ${truth.files.old} + ${truth.files.new} files, ${(truth.bytes / 1e9).toFixed(2)} GB in ${((performance.now() - t0) / 1000).toFixed(1)} s; planted: ${counts}; ${truth.notUpgraded.length} not upgraded\n`,
  );
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) main(process.argv.slice(2));
