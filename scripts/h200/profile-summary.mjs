// Where each profiled process spent its main thread (scripts/h200/cpu-profile.mjs's files): for each
// <pid>.cpuprofile in DIR, its total, the functions with the most self time, the project's functions with the
// most inclusive time (a blocking driver call counts in the function that made it), and when the longest of them ran.
//   node scripts/h200/profile-summary.mjs DIR [TOP]
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const [dir, topArg] = process.argv.slice(2);
if (!dir) {
  console.error('usage: node scripts/h200/profile-summary.mjs DIR [TOP]');
  process.exit(2);
}
const top = Number(topArg ?? 25);
// the project's own code (dist/, or .old/dist/ for the build it is compared with), not its dependencies'
const ours = (url) => /\/dist\//.test(url) && !/\/node_modules\//.test(url);
for (const file of readdirSync(dir).filter((f) => f.endsWith('.cpuprofile')).sort()) {
  const p = JSON.parse(readFileSync(join(dir, file), 'utf8'));
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const name = (n) => `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.replace(/^.*\/(dist|node_modules)\//, '$1/')}:${n.callFrame.lineNumber + 1}`;
  // the project's functions on a node's stack, each once (a recursion counted once), walked once per node
  const stacks = new Map();
  const ourStack = (id) => {
    let names = stacks.get(id);
    if (names) return names;
    const seen = new Set();
    for (let x = id; x !== undefined; x = parent.get(x)) {
      const m = byId.get(x);
      if (ours(m.callFrame.url)) seen.add(name(m));
    }
    names = [...seen];
    stacks.set(id, names);
    return names;
  };
  // one pass over the samples: self time, inclusive time, and when each of the project's functions was first and
  // last on a stack (ms from the profiler's start: the path through the process in time, where inclusive times say
  // how much but not when)
  const self = new Map();
  const incl = new Map();
  const span = new Map();
  let total = 0;
  p.samples.forEach((id, i) => {
    const ms = (p.timeDeltas[i] ?? 0) / 1000;
    total += ms;
    const leaf = name(byId.get(id));
    self.set(leaf, (self.get(leaf) ?? 0) + ms);
    for (const k of ourStack(id)) {
      incl.set(k, (incl.get(k) ?? 0) + ms);
      const s = span.get(k);
      if (s) s[1] = total;
      else span.set(k, [total, total]);
    }
  });
  const list = (m) => [...m].sort((a, b) => b[1] - a[1]).slice(0, top).map(([k, ms]) => `  ${ms.toFixed(1).padStart(8)}  ${k}`);
  console.log(`${file}: ${total.toFixed(0)} ms profiled (from the profiler's start to the exit)`);
  console.log(' self time, ms:');
  console.log(list(self).join('\n'));
  console.log(" the project's functions, inclusive time, ms:");
  console.log(list(incl).join('\n'));
  console.log(" the project's functions in time (of those with 5 ms or more: first and last sample on a stack, ms from the start; inclusive ms):");
  const steps = [...span].filter(([k]) => (incl.get(k) ?? 0) >= 5).sort((x, y) => x[1][0] - y[1][0]).slice(0, 2 * top);
  console.log(steps.map(([k, [a, b]]) => `  ${a.toFixed(0).padStart(6)} - ${b.toFixed(0).padStart(6)}  ${(incl.get(k) ?? 0).toFixed(0).padStart(6)}  ${k}`).join('\n'));
  console.log('');
}
