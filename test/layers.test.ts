// The layers of the house (docs/development.md, "Layout"), bottom-up: the model (src/) and results/, which load no driver;
// bindings/; suites/; reporters/; history/; cli/; bench/. A file may import its own layer or a lower one, never a
// higher one, and the imports make no circle. Read from the sources with a regex over `from '…'` and
// `import('…')`: type-only imports count too (they tie the layers together just the same).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Each top folder's layer; a higher number may import a lower one. */
const LAYERS: Readonly<Record<string, number>> = { src: 0, results: 0, bindings: 1, suites: 2, reporters: 3, history: 4, cli: 5, bench: 6 };
/** Packages the bottom layer must not load: it never touches a driver. */
const DRIVER_PACKAGES = ['koffi'];

type Graph = Map<string, string[]>;

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return walk(path);
    return /\.ts$/.test(name) && !/\.test\.ts$/.test(name) ? [path] : [];
  });
}

/** Every import specifier of a TypeScript source. */
function importsOf(text: string): string[] {
  return [...text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)['"]([^'"]+)['"]/gm)].map((m) => m[1]!);
}

/** file (relative to the root) -> what it imports: files of the project (relative, `.ts`), or package names. */
function importGraph(files: Readonly<Record<string, string>>): Graph {
  const graph: Graph = new Map();
  for (const [file, text] of Object.entries(files)) {
    graph.set(
      file,
      importsOf(text).map((spec) => (spec.startsWith('.') ? relative(root, resolve(root, dirname(file), spec)).replace(/\.js$/, '.ts') : spec)),
    );
  }
  return graph;
}

const layerOf = (file: string): number | undefined => LAYERS[file.split('/')[0]!];

/** Every import that goes up a layer, or from the bottom layer to a driver package, as `from -> to`. */
function upwardImports(graph: Graph): string[] {
  const bad: string[] = [];
  for (const [from, targets] of graph) {
    const fromLayer = layerOf(from);
    if (fromLayer === undefined) continue;
    for (const to of targets) {
      if (!graph.has(to)) {
        if (fromLayer === 0 && DRIVER_PACKAGES.some((p) => to === p || to.startsWith(`${p}/`))) bad.push(`${from} -> ${to}`);
        continue;
      }
      const toLayer = layerOf(to);
      if (toLayer === undefined || toLayer > fromLayer) bad.push(`${from} -> ${to}`);
    }
  }
  return bad;
}

/** A circle of imports among the project's files, as the list of its files (first repeated last), or undefined. */
function findCircle(graph: Graph): string[] | undefined {
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (file: string): string[] | undefined => {
    if (state.get(file) === 'done') return undefined;
    if (state.get(file) === 'open') return [...path.slice(path.indexOf(file)), file];
    state.set(file, 'open');
    path.push(file);
    for (const to of graph.get(file) ?? []) {
      if (!graph.has(to)) continue;
      const circle = visit(to);
      if (circle) return circle;
    }
    path.pop();
    state.set(file, 'done');
    return undefined;
  };
  for (const file of graph.keys()) {
    const circle = visit(file);
    if (circle) return circle;
  }
  return undefined;
}

function sources(): Record<string, string> {
  const files: Record<string, string> = {};
  for (const top of Object.keys(LAYERS)) for (const path of walk(join(root, top))) files[relative(root, path)] = readFileSync(path, 'utf8');
  return files;
}

describe('the import graph of the sources', () => {
  const files = sources();
  const graph = importGraph(files);

  it('reads every layer, and every project import resolves to a source file', () => {
    for (const top of Object.keys(LAYERS)) expect([...graph.keys()].some((f) => f.startsWith(`${top}/`)), top).toBe(true);
    const unresolved = [...graph].flatMap(([from, targets]) => targets.filter((t) => t.endsWith('.ts') && !graph.has(t)).map((t) => `${from} -> ${t}`));
    // a .mjs or .json import is no source of a layer; a .ts one that is not found would be a misread graph
    expect(unresolved).toEqual([]);
  });

  it('has no import from a lower layer to a higher one, and the bottom layer loads no driver package', () => {
    expect(upwardImports(graph)).toEqual([]);
  });

  it('has no circle', () => {
    expect(findCircle(graph)).toBeUndefined();
  });

  // The checks themselves, against graphs made to break them: a test that cannot fail proves nothing.
  it('catches an upward import, a bottom-layer driver import and a circle', () => {
    const broken = { ...files };
    broken['src/device.ts'] += "\nimport { discover } from '../bindings/discovery.js';\n";
    broken['results/types.ts'] += "\nimport koffi from 'koffi';\n";
    broken['suites/check.ts'] += "\nconst lazy = () => import('../cli/select-devices.js');\n";
    const bad = upwardImports(importGraph(broken));
    expect(bad).toContain('src/device.ts -> bindings/discovery.ts');
    expect(bad).toContain('results/types.ts -> koffi');
    expect(bad).toContain('suites/check.ts -> cli/select-devices.ts');

    const circle = findCircle(importGraph({ 'bindings/a.ts': "import { b } from './b.js';", 'bindings/b.ts': "import type { A } from './a.js';" }));
    expect(circle).toEqual(['bindings/a.ts', 'bindings/b.ts', 'bindings/a.ts']);
  });
});
