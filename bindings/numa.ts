// Memory placed on the GPU's NUMA node: on a host of several nodes, a copy from memory on the far node crosses the
// inter-socket link and is slower for a reason that is neither the driver's nor the machine's load. The policy is
// the calling thread's (set_mempolicy) or a range's (mbind); it decides where pages go when first touched. None of
// these throws for a refusal of the kernel: the caller records why and times the copy anyway.
import { LibcError, getMempolicy, mbind, setMempolicy } from './libc.js';
import { onlineNodes, readNumaNode } from './pci.js';

/** The kernel's policy modes (linux/mempolicy.h). */
export const MPOL_DEFAULT = 0;
export const MPOL_PREFERRED = 1;
export const MPOL_BIND = 2;
export const MPOL_INTERLEAVE = 3;
export const MPOL_LOCAL = 4;

export type PolicyResult = { ok: true } | { ok: false; error: string };

/** Runs a policy call; its LibcError (or a node out of range) becomes ok:false with the errno's text. */
function attempt(f: () => void): PolicyResult {
  try {
    f();
    return { ok: true };
  } catch (e) {
    if (e instanceof LibcError || e instanceof RangeError) return { ok: false, error: e.message };
    throw e;
  }
}

/**
 * The calling thread's new pages go to `node` first (MPOL_PREFERRED), elsewhere when it is full. A node the
 * kernel does not have (or may not use here) is ok:false, e.g. "set_mempolicy: Invalid argument (EINVAL)".
 */
export function preferNode(node: number): PolicyResult {
  return attempt(() => setMempolicy(MPOL_PREFERRED, [node]));
}

/** The pages of a page-aligned range, when first touched, go to `node` first (mbind, MPOL_PREFERRED). */
export function bindRange(address: bigint, length: number, node: number): PolicyResult {
  return attempt(() => mbind(address, length, MPOL_PREFERRED, [node]));
}

/** The calling thread's policy: its mode (MPOL_*) and nodes. */
export function currentPolicy(): { mode: number; nodes: number[] } {
  return getMempolicy();
}

/** The calling thread back to the default policy (new pages on the node of the CPU that touches them). */
export function resetPolicy(): PolicyResult {
  return attempt(() => setMempolicy(MPOL_DEFAULT, []));
}

export interface Placement {
  /** The GPU's NUMA node (sysfs numa_node), null when not known. */
  node: number | null;
  /** The host's nodes online. */
  nodes: number[];
  /** Whether the calling thread now prefers the GPU's node. */
  placed: boolean;
  /** Why not placed. */
  note?: string;
}

/**
 * Makes the calling thread's new pages prefer the NUMA node of the GPU at `pciBusId`, where the host has more
 * than one node and sysfs knows the GPU's. On a host of one node nothing is done (there is no far memory).
 */
export function placeOnGpuNode(pciBusId: string): Placement {
  const nodes = onlineNodes();
  const node = readNumaNode(pciBusId);
  if (nodes.length <= 1) return { node, nodes, placed: false, note: 'one NUMA node' };
  if (node === null) return { node, nodes, placed: false, note: `the NUMA node of ${pciBusId} is not known` };
  const r = preferNode(node);
  return r.ok ? { node, nodes, placed: true } : { node, nodes, placed: false, note: `node ${node}: ${r.error}` };
}
