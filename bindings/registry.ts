// The backends, one module each (bindings/backends/), in the order devices are listed: the one place a backend is
// described (its id, library, discovery group, device id form, whether its driver registers host memory and, if
// so, its driver's name, its "not registered" and "invalid value" codes and how the model reads its integrated
// query). Discovery, the selection of a run, its discovery groups, the model's verdict, the hazard checks and
// the bench read these modules instead of naming backends.
//
// Adding a backend to the product takes:
//   - its module in bindings/backends/ (a driver that registers: with its binding, e.g. bindings/cuda.ts, and
//     registering.ts: registeringBackend for the module, registeringDevice for its devices), and its line in
//     BUILT_IN below;
//   - its id in results/types.ts's BACKENDS, and in results/results.schema.json's backend enum and device id
//     pattern (test/registry.test.ts fails until the schema says what BACKENDS and the modules' deviceId say);
//   - where a user reads the list: `--backend` in docs/usage.md (the --help text, from backendIds()) and the
//     `backend` input of action.yml;
//   - a driver double in test/double/ for its tests.
// Optional: its vendor's management library in bindings/gpu-users.ts, to see the device's other users (without
// one, the run notes that there is none).
// registerTestBackend is not a way to add one: it is the tests' extension point (see there).
import { type Backend, BACKENDS } from '../results/types.js';
import type { BackendModule } from './backend.js';
import { cpu } from './backends/cpu.js';
import { cuda } from './backends/cuda.js';
import { hip } from './backends/hip.js';
import { opencl } from './backends/opencl.js';
import { vulkan } from './backends/vulkan.js';

export type { BackendModule } from './backend.js';

/** Every member of the Backend union, with its module (the mapped type asks for one once BACKENDS names it). */
const BUILT_IN: { readonly [B in Backend]: BackendModule & { readonly id: B } } = { cuda, hip, opencl, vulkan, cpu };

const modules: BackendModule[] = BACKENDS.map((b) => BUILT_IN[b]);

/**
 * For tests only: adds a backend after the built-in ones, in this process alone, and returns the undo. A
 * test's fake backend (test/support/fake-backend.ts) proves through it that discovery, selection, the model's
 * verdict, the probe and the hazard checks need nothing but a module. The product never calls it: its
 * backends are BUILT_IN, the ones the results schema names; a run's results naming a backend added here do not
 * validate, and the processes a run starts (discovery, the truncation child) do not know it. Refuses an id
 * already there.
 */
export function registerTestBackend(module: BackendModule): () => void {
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

/** The ids of the backends whose driver registers host memory, in listing order. */
export function registeringBackendIds(): Backend[] {
  return modules.filter((m) => m.registers).map((m) => m.id);
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

/** The module whose device id form (BackendModule.deviceId) `deviceId` has, e.g. cuda's for `cuda:0`. */
export function backendOfDevice(deviceId: string): BackendModule | undefined {
  return modules.find((m) => new RegExp(`^(?:${m.deviceId})$`).test(deviceId));
}
