// Kinds of mapping other than a read-only shared file on disk: a file on tmpfs, a memfd, a private mapping. Each
// may be refused; registered, it must serve its bytes and release at the first try (ROCm 7.2.4 served zeros from
// tmpfs). What the H200 did: docs/hazards.md.
import { randomFillSync } from 'node:crypto';
import { MAP, PROT, closeFd, memfdCreate, pwrite, statfs } from '../../bindings/libc.js';
import { withTrackedOps } from '../context.js';
import { FILE_BYTES, hazard, servesOrRefuses, withHeld, withMappedFile, withMapping } from './harness.js';

/** Where tmpfs is. */
const TMPFS_DIR = '/dev/shm';

export const tmpfsBytes = hazard('hazard.tmpfs_bytes', 'a file on tmpfs: refused, or registered serving its bytes', (ctx) => {
  let fs: string;
  try {
    fs = statfs(TMPFS_DIR).fsName;
  } catch (e) {
    fs = e instanceof Error ? e.message : String(e);
  }
  if (fs !== 'tmpfs') return { status: 'warn', expected: `a tmpfs at ${TMPFS_DIR}`, observed: `not measured: ${TMPFS_DIR} is ${fs}` };
  return withMappedFile(ctx, { dir: TMPFS_DIR }, (m, bytes, ops) => withHeld(ops, (held) => servesOrRefuses(held, m, bytes, ops.registerFlags, `PROT_READ MAP_SHARED file on tmpfs (${TMPFS_DIR})`)));
});

export const memfdBytes = hazard('hazard.memfd_bytes', 'a memfd mapped read-write and shared: refused, or registered serving its bytes', (ctx) => {
  const size = FILE_BYTES;
  const fd = memfdCreate('mapped-reg-hazard');
  try {
    const bytes = new Uint8Array(size);
    randomFillSync(bytes);
    for (let done = 0; done < size; ) done += pwrite(fd, bytes.subarray(done), done);
    // Writable memory registers without the read-only flag.
    return withMapping(ctx, fd, size, PROT.READ | PROT.WRITE, MAP.SHARED, (m) =>
      withTrackedOps(ctx, size, (ops) => withHeld(ops, (held) => servesOrRefuses(held, m, bytes, 0, 'memfd, PROT_READ|PROT_WRITE MAP_SHARED'))),
    );
  } finally {
    closeFd(fd);
  }
});

export const privateMappingBytes = hazard('hazard.private_mapping_bytes', 'a private read-only file mapping: refused, or registered serving its bytes', (ctx) =>
  withMappedFile(ctx, { flags: MAP.PRIVATE }, (m, bytes, ops) => withHeld(ops, (held) => servesOrRefuses(held, m, bytes, ops.registerFlags, 'PROT_READ MAP_PRIVATE file'))),
);
