// The backends, one module each (bindings/backends/), in the order devices are listed. Discovery, the selection
// of a run and its discovery groups read this list instead of naming backends. A new backend: its module, one
// line below (the mapped type makes the compiler ask for it once its name is in results/types.ts's Backend and
// the schema's enum), and its driver double.
import { type Backend, BACKENDS } from '../results/types.js';
import type { BackendModule } from './backend.js';
import { cpu } from './backends/cpu.js';
import { cuda } from './backends/cuda.js';
import { hip } from './backends/hip.js';
import { opencl } from './backends/opencl.js';
import { vulkan } from './backends/vulkan.js';

export type { BackendModule } from './backend.js';

/** Every member of the Backend union, with its module. */
const BUILT_IN: { readonly [B in Backend]: BackendModule & { readonly id: B } } = { cuda, hip, opencl, vulkan, cpu };

const modules: BackendModule[] = BACKENDS.map((b) => BUILT_IN[b]);

/**
 * Adds a backend after the others (a test's fake; a backend of a build that has more). Refuses an id already
 * there. Returns the undo.
 */
export function registerBackend(module: BackendModule): () => void {
  if (modules.some((m) => m.id === module.id)) throw new Error(`backend ${module.id} is already registered`);
  modules.push(module);
  return () => {
    const i = modules.indexOf(module);
    if (i >= 0) modules.splice(i, 1);
  };
}

/** The modules, in listing order. */
export function backendModules(): readonly BackendModule[] {
  return [...modules];
}

/** The ids, in listing order: what `--backend` accepts, and every backend by default. */
export function backendIds(): Backend[] {
  return modules.map((m) => m.id);
}

export function backendModule(id: string): BackendModule | undefined {
  return modules.find((m) => m.id === id);
}

export function isBackend(id: string): id is Backend {
  return backendModule(id) !== undefined;
}

/** Where `id` comes in the listing order; after every registered one when it is not registered. */
export function backendRank(id: string): number {
  const i = modules.findIndex((m) => m.id === id);
  return i < 0 ? modules.length : i;
}

/** True for a backend whose driver registers host memory (its devices are probed, each in a process of its own). */
export function registersHostMemory(id: string): boolean {
  return backendModule(id)?.registers === true;
}

/** The discovery groups (BackendModule.group) of `backends`, in listing order, empty ones left out. */
export function backendGroups(backends: readonly Backend[] = backendIds()): Backend[][] {
  const groups = new Map<string, Backend[]>();
  for (const m of modules) {
    if (!backends.includes(m.id)) continue;
    const g = groups.get(m.group);
    if (g) g.push(m.id);
    else groups.set(m.group, [m.id]);
  }
  return [...groups.values()];
}
