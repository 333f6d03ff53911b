// The fleet of bench/fleet.ts given the rounds of the pair (store version 3): every timed device of every file gets
// 7 rounds of its registered and page-locked copies (seeded, each copy slower than its figure by |2% x a normal
// draw|, so a figure stays the best of its rounds), the files become schemaVersion 3, and each old-side file gets
// K - 1 earlier runs of its host (an hour apart): what `history compare` decides each device's figures on, with
// their noise, over K + 1 runs (docs/bench.md, "With the rounds").
//   node dist/bench/fleet.js --hosts 10000 --out /tmp/fleet && node dist/bench/fleet-rounds.js /tmp/fleet 2
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RunResult } from '../results/types.js';
import { random } from './fleet.js';

const ROUNDS = 7;
const SPREAD = 0.02;

/** The file's devices given their rounds, the file schemaVersion 3. */
function withRounds(r: RunResult, u: () => number): RunResult {
  const gauss = (): number => Math.sqrt(-2 * Math.log(1 - u())) * Math.cos(2 * Math.PI * u());
  const slower = (ms: number): number => ms * Math.exp(Math.abs(SPREAD * gauss()));
  for (const d of r.devices) {
    const t = d.timing;
    if (!t) continue;
    const ms = (gbps: number): number => t.bytes / gbps / 1e6;
    const registeredMs = Array.from({ length: ROUNDS }, () => slower(ms(t.registeredGBps)));
    const pageLockedMs = Array.from({ length: ROUNDS }, () => slower(ms(t.pageLockedGBps ?? t.registeredGBps)));
    t.samples = { registeredMs, pageLockedMs, stagedMs: registeredMs.map(() => null), hostCopyMs: registeredMs.map(() => null) };
  }
  (r as { schemaVersion: number }).schemaVersion = 3;
  return r;
}

function main(argv: string[]): void {
  const [dir, k] = [argv[0], Number(argv[1] ?? 1)];
  if (!dir || !Number.isInteger(k) || k < 1) {
    process.stderr.write('usage: node dist/bench/fleet-rounds.js FLEET_DIR [K]   (K runs of each host on the old side, default 1)\n');
    process.exit(2);
  }
  const u = random(37);
  for (const side of ['old', 'new']) {
    for (const f of readdirSync(join(dir, side)).filter((x) => x.endsWith('.json'))) {
      const p = join(dir, side, f);
      const text = readFileSync(p, 'utf8');
      writeFileSync(p, JSON.stringify(withRounds(JSON.parse(text) as RunResult, u)));
      for (let i = 1; side === 'old' && i < k; i++) {
        const r = withRounds(JSON.parse(text) as RunResult, u);
        const earlier = (at: string): string => new Date(Date.parse(at) - i * 3600e3).toISOString();
        r.startedAt = earlier(r.startedAt);
        r.finishedAt = earlier(r.finishedAt);
        writeFileSync(join(dir, side, `earlier${i}-${f}`), JSON.stringify(r));
      }
    }
  }
}

main(process.argv.slice(2));
