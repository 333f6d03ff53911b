// The promises the reference suites test (hip-tests, cuda-samples, the CUDA driver documentation of
// cuMemHostRegister), held on a file-backed mapping: one registration copied from another context (PORTABLE), a copy
// on a created stream, the GPU reading the mapping through its device pointer, and one registration copied to every
// GPU at once. Each check registers its own file, proves the bytes against it, and releases what it registered.
// Which reference test each answers, and where each runs: docs/reference-checks.md. The copy machinery is
// ./reference-copies-harness.ts; the list of all the reference checks ./reference.ts.
import { MAP, PROT } from '../../bindings/libc.js';
import type { Check, CheckContext, Observation } from '../check.js';
import { codeText, driverCall, hex, nothingTo, registerOrNothingTo, serveCopy, servedText, succeeded, withHeld, withMappedFile, withMapping } from './harness.js';
import {
  ASYNC_BYTES,
  DEVICE_POINTER_BYTES,
  EVERY_GPU_BYTES,
  PORTABLE_BYTES,
  askPointer,
  deviceBytes,
  gbpsText,
  hostTimed,
  interleavedGBps,
  uploadTimer,
  referenceOf,
  streamCopied,
  streamCopy,
  streamCopyText,
  valueOrWhy,
  withDevicesOps,
} from './reference-copies-harness.js';
import { referenceCheckWhere } from './reference-harness.js';
import type { ReferenceKit } from '../../bindings/reference-kit.js';
import { type HostWait, timedUnderLock } from '../measure.js';
import { writeEvent } from '../protocol.js';
import { HostFault } from '../../bindings/host-fault.js';

/** A copy check: a reference check that applies where the device's driver has the copies' calls (and `more` says yes). */
function copyCheck(id: string, title: string, run: (ctx: CheckContext, kit: ReferenceKit) => Observation, more?: (ctx: CheckContext, kit: ReferenceKit) => true | string): Check {
  return referenceCheckWhere(id, title, (ctx, kit) => (kit.missing !== undefined ? `${ctx.device.driver.name} ${ctx.device.driver.version}: ${kit.missing}` : more ? more(ctx, kit) : true), run);
}

const diffText = (diff: number | null): string => (diff === null ? 'not compared' : diff === -1 ? 'bytes equal' : `bytes differ at offset ${diff}`);

// ---- portable: one registration, copied from a second context ----

export const portableSecondContext = copyCheck(
  'hazard.portable_second_context',
  'a window registered PORTABLE in the device\'s context is copied from a second context: right bytes, at the registered speed, not the staged one',
  (ctx, kit) => {
    const second = kit.secondContext();
    if (typeof second === 'string') throw new Error(second); // applies said so
    const size = PORTABLE_BYTES;
    return withMappedFile(ctx, { size }, (m, bytes, ops, fd) =>
      withHeld(ops, (held) => {
        const flags = kit.portableFlag | ops.registerFlags;
        const margin = ctx.options.minRelativeSpeed;
        const expected = `registered with flags ${hex(flags)} in the device's context; from ${second.what}: the file's bytes, at least ${margin} of the first context's registered speed`;
        const reg = registerOrNothingTo(held, m, { expected, nothingTo: 'copy from a second context', flags });
        if (nothingTo(reg)) return reg.refused;
        // the same file mapped again, unregistered: the staged (pageable) copy of the same bytes, for comparison
        return withMapping(ctx, fd, size, PROT.READ, MAP.SHARED, (staged) =>
          second.withOps(size, (other) => {
            const served = serveCopy(other, m, bytes);
            const runs = Math.max(3, ctx.options.runs);
            // each context's copies on its device's clock, under the probe's timing lock, held shared: never beside a
            // probe's timed copies, but beside the truncation children's driver starts (which hold it shared from
            // the probe's end, when this check comes), which slow the two contexts' interleaved copies alike
            const mine = uploadTimer(ops);
            const theirs = uploadTimer(other);
            const lock = { deviceId: ctx.device.id, backend: ctx.device.backend, pciBusId: ctx.device.pciBusId, waitS: ctx.options.quiet.waitS, onWait: (w: HostWait) => writeEvent({ type: 'wait', device: ctx.device.id, ...w }), shared: true };
            let busy: string[] = [];
            // the wait for the lock (the probes' timed copies of other devices): the check's time that is not its own
            let lockWaitMs = 0;
            const measure = (look: boolean): number[] => {
              const t = timedUnderLock({ ...lock, look }, () => interleavedGBps(size, runs, [() => mine.time(m), () => theirs.time(m), () => theirs.time(staged)]));
              busy = t.busy;
              lockWaitMs += t.lockWaitMs;
              return t.value;
            };
            let first: number | undefined;
            let fromSecond: number | undefined;
            let stagedGBps: number | undefined;
            let measuredTwice = false;
            try {
              // the machine is not looked at here: busy or not, a second context at the registered speed passes
              if (served.diff === -1) [first, fromSecond, stagedGBps] = measure(false);
              // a slow second context is measured once more, the machine looked at around it (the probe's looks),
              // before it counts: slow there on a busy machine is the host's, never the driver's
              if (first !== undefined && fromSecond !== undefined && fromSecond / first < margin) {
                measuredTwice = true;
                const again = measure(true);
                if (again[1]! / again[0]! > fromSecond / first) [first, fromSecond, stagedGBps] = again;
              }
            } finally {
              mine.close();
              theirs.close();
            }
            const clock = mine.clock === 'device' && theirs.clock === 'device' ? 'device' : 'host';
            const unregister = held.unregister(m);
            const ratio = first !== undefined && fromSecond !== undefined ? fromSecond / first : undefined;
            const fast = ratio !== undefined && ratio >= margin;
            // slow on a busy machine: the host's, not the driver's (never a failure of the driver)
            const hostsFault = served.diff === -1 && ratio !== undefined && !fast && busy.length > 0 && succeeded(unregister);
            const good = served.diff === -1 && fast && succeeded(unregister);
            const timing = first !== undefined && fromSecond !== undefined && stagedGBps !== undefined ? `; first context ${gbpsText(first)}, second ${gbpsText(fromSecond)} (${ratio!.toFixed(3)} of it), staged ${gbpsText(stagedGBps)} (${clock}'s clock)` : '';
            // the check's status `error` (suites/check.ts): the host could not let the driver be judged
            if (hostsFault) throw new HostFault(`the machine was busy during the timed copies (${busy.join('; ')}): the copy from the second context, below the margin there, is not judged${timing}`);
            return {
              status: good ? 'pass' : 'fail',
              expected,
              observed: `register 0; from ${second.what}: ${servedText(served)}${timing}; unregister ${codeText(unregister)}`,
              ...(good
                ? {}
                : {
                    message:
                      served.diff !== -1
                        ? 'the second context did not get the file\'s bytes'
                        : !fast
                          ? `the copy from the second context ran at ${ratio!.toFixed(3)} of the registered one, below ${margin}: the driver treats the PORTABLE registration as pageable memory there`
                          : 'the release failed',
                  }),
              data: {
                flags,
                secondContext: second.what,
                copy: served.copy.code,
                firstDifference: served.diff,
                ...(first !== undefined ? { firstGBps: first, secondGBps: fromSecond, stagedGBps, ratio, minRelativeSpeed: margin, runs, measuredTwice, clock, lockWaitMs } : {}),
                unregister: unregister.code,
              },
            };
          }, { log: ctx.log }),
        );
      }),
    );
  },
  (_ctx, kit) => {
    const second = kit.secondContext();
    return typeof second === 'string' ? second : true;
  },
);

// ---- async: a copy on a created stream ----

export const asyncStreamCopy = copyCheck(
  'hazard.async_stream_copy',
  'a registered window is copied on a created stream (async copy, then synchronize) with the right bytes; its speed is reported beside the synchronous copy\'s',
  (ctx, kit) =>
    withMappedFile(ctx, { size: ASYNC_BYTES }, (m, bytes, ops) =>
      withHeld(ops, (held) => {
        const expected = `registered, copied with ${kit.names.async} on a created stream, synchronized: the file's bytes; released at the first try`;
        const reg = registerOrNothingTo(held, m, { expected, nothingTo: 'copy on a stream' });
        if (nothingTo(reg)) return reg.refused;
        const s = streamCopy(ops, m);
        const got = streamCopied(s) ? deviceBytes(ops, bytes) : undefined;
        const right = got?.diff === -1;
        const runs = Math.max(3, ctx.options.runs);
        // reported, not judged: the spec's margin is for the registered copy against the staged one
        const ref = referenceOf(ops);
        let syncGBps: number | undefined;
        let asyncGBps: number | undefined;
        if (right) {
          const stream = ref.createStream();
          try {
            [syncGBps, asyncGBps] = interleavedGBps(m.bytes.length, runs, [
              hostTimed(() => ops.upload(m)),
              hostTimed(() => {
                ref.uploadAsync(m, stream);
                ref.synchronizeStream(stream);
              }),
            ]);
          } finally {
            ref.destroyStream(stream);
          }
        }
        const unregister = held.unregister(m);
        const good = right && succeeded(unregister) && s.destroy?.code === 0;
        const timing = syncGBps !== undefined && asyncGBps !== undefined ? `; synchronous ${gbpsText(syncGBps)}, async ${gbpsText(asyncGBps)}` : '';
        return {
          status: good ? 'pass' : 'fail',
          expected,
          observed: `register 0; ${streamCopyText(s)}; ${got ? (got.download.code === 0 ? diffText(got.diff) : `download ${codeText(got.download)}`) : 'no bytes to compare'}${timing}; unregister ${codeText(unregister)}`,
          ...(good ? {} : { message: !streamCopied(s) ? 'the copy on the stream failed' : !right ? 'the copy on the stream brought the wrong bytes (a false success)' : s.destroy?.code !== 0 ? 'the stream would not be destroyed' : 'the release failed' }),
          data: {
            stream: s.create.code,
            ...(s.copy ? { asyncCopy: s.copy.code, synchronize: s.sync?.code, destroy: s.destroy?.code } : {}),
            firstDifference: got?.diff ?? null,
            ...(syncGBps !== undefined ? { syncGBps, asyncGBps, runs } : {}),
            unregister: unregister.code,
          },
        };
      }),
    ),
);

// ---- the device pointer: the GPU reads the mapping through its own address ----

export const devicePointerRead = copyCheck(
  'hazard.device_pointer',
  'a window registered for device mapping has a device pointer the GPU reads the file\'s bytes through; after release the driver no longer knows it',
  (ctx, kit) =>
    withMappedFile(ctx, { size: DEVICE_POINTER_BYTES }, (m, bytes, ops) =>
      withHeld(ops, (held) => {
        const flags = kit.deviceMapFlag | ops.registerFlags;
        const canUse = valueOrWhy(kit.attribute('hostPointer'));
        const pageable = valueOrWhy(kit.attribute('pageableAccess'));
        // whether the pointer equals the host's where the attribute says so is hazard.host_pointer_attribute's promise
        const expected = `registered with flags ${hex(flags)}; ${kit.devicePointerCall} gives a pointer the device can read; ${kit.names.deviceToDevice} from it brings the file's bytes; after release ${kit.names.pointerQuery} no longer knows the address`;
        const reg = registerOrNothingTo(held, m, { expected, nothingTo: 'read through', flags });
        if (nothingTo(reg)) return reg.refused;
        const ref = referenceOf(ops);
        let pointer: bigint | undefined;
        const got = driverCall(() => {
          pointer = ref.hostDevicePointer(m);
        });
        const read = pointer !== undefined ? driverCall(() => ref.copyFromDevicePointer(pointer!, m.bytes.length)) : undefined;
        const seen = read?.code === 0 ? deviceBytes(ops, bytes) : undefined;
        const before = askPointer(ref, m.address);
        const unregister = held.unregister(m);
        // only asked, never read through: a read of a released address can poison the context
        const after = succeeded(unregister) ? askPointer(ref, m.address) : undefined;
        const stillKnown = after !== undefined && after.code.code === 0;
        const right = seen?.diff === -1;
        const problems = [
          pointer === undefined ? `${kit.devicePointerCall} failed` : '',
          pointer !== undefined && !right ? 'the device read the wrong bytes through the device pointer (a false success)' : '',
          !succeeded(unregister) ? 'the release failed' : '',
          stillKnown && pageable !== 1 ? `${kit.names.pointerQuery} still answers for the released range (device pointer ${hex(after!.devicePointer!)})` : '',
        ].filter(Boolean);
        const warn = problems.length === 0 && stillKnown && pageable === 1;
        return {
          status: problems.length > 0 ? 'fail' : warn ? 'warn' : 'pass',
          expected,
          observed: [
            'register 0',
            `device pointer ${pointer !== undefined ? hex(pointer) : codeText(got)} (host ${hex(m.address)}, CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM ${canUse})`,
            read ? `read through it: ${read.code === 0 ? diffText(seen?.diff ?? null) : codeText(read)}` : '',
            `query before release: ${before.code.code === 0 ? hex(before.devicePointer!) : codeText(before.code)}`,
            `unregister ${codeText(unregister)}`,
            after ? `query after release: ${after.code.code === 0 ? hex(after.devicePointer!) : codeText(after.code)}` : '',
          ]
            .filter(Boolean)
            .join('; '),
          ...(problems.length > 0 ? { message: problems.join('; ') } : warn ? { message: `the released range is still known, on a device with PAGEABLE_MEMORY_ACCESS 1 (the device reaches pageable memory anyway): recorded, not judged` } : {}),
          data: {
            flags,
            devicePointer: pointer !== undefined ? hex(pointer) : null,
            hostPointer: hex(m.address),
            canUseHostPointer: canUse,
            pageableMemoryAccess: pageable,
            devicePointerCall: got.code,
            ...(read ? { read: read.code, firstDifference: seen?.diff ?? null } : {}),
            queryBefore: before.code.code,
            unregister: unregister.code,
            ...(after ? { queryAfter: after.code.code, queryAfterName: after.code.name } : {}),
          },
        };
      }),
    ),
);

// ---- several GPUs at once ----

export const everyGpuAtOnce = copyCheck(
  'hazard.every_gpu_at_once',
  'one PORTABLE registration is copied to every GPU of the driver at the same time (async copies in flight together), each with the right bytes',
  (ctx, kit) => {
    const count = kit.deviceCount();
    const ordinals = Array.from({ length: count }, (_, i) => i).filter((i) => i !== ctx.device.native!.ordinal);
    return withMappedFile(ctx, { size: EVERY_GPU_BYTES }, (m, bytes, ops) =>
      withHeld(ops, (held) => {
        const flags = kit.portableFlag | ops.registerFlags;
        const expected = `registered once with flags ${hex(flags)}, copied to all ${count} devices at the same time: the file's bytes on each; released at the first try`;
        const reg = registerOrNothingTo(held, m, { expected, nothingTo: 'copy to every device', flags });
        if (nothingTo(reg)) return reg.refused;
        const copies = withDevicesOps(kit, ordinals, m.bytes.length, ctx.log, (others) => {
          const all = [ops, ...others];
          // every copy in flight before any is waited for
          const started = all.map((o) => {
            const ref = referenceOf(o);
            let stream = 0n;
            const create = driverCall(() => {
              stream = ref.createStream();
            });
            const copy = create.code === 0 ? driverCall(() => ref.uploadAsync(m, stream)) : undefined;
            return { o, ref, stream, create, copy };
          });
          return started.map(({ o, ref, stream, create, copy }) => {
            if (create.code !== 0) return { ordinal: o.ordinal, create, diff: null as number | null };
            const sync = driverCall(() => ref.synchronizeStream(stream));
            const destroy = driverCall(() => ref.destroyStream(stream));
            const ok = copy?.code === 0 && sync.code === 0;
            return { ordinal: o.ordinal, create, copy, sync, destroy, diff: ok ? deviceBytes(o, bytes).diff : null };
          });
        });
        const unregister = held.unregister(m);
        const wrong = copies.filter((c) => c.diff !== -1);
        const good = wrong.length === 0 && succeeded(unregister);
        const each = (c: (typeof copies)[number]): string =>
          `${ctx.device.backend}:${c.ordinal} ${c.create.code !== 0 ? `stream ${codeText(c.create)}` : c.copy && c.copy.code !== 0 ? `async copy ${codeText(c.copy)}` : 'sync' in c && c.sync && c.sync.code !== 0 ? `synchronize ${codeText(c.sync)}` : diffText(c.diff)}`;
        return {
          status: good ? 'pass' : 'fail',
          expected,
          observed: `register 0; ${copies.map(each).join(', ')}; unregister ${codeText(unregister)}`,
          ...(good ? {} : { message: wrong.length > 0 ? `${wrong.length} of ${copies.length} devices did not get the file's bytes` : 'the release failed' }),
          data: { flags, devices: copies.map((c) => ({ ordinal: c.ordinal, stream: c.create.code, firstDifference: c.diff })), unregister: unregister.code },
        };
      }),
    );
  },
  (ctx, kit) => {
    const count = kit.deviceCount();
    if (count < 2) return `one ${ctx.device.driver.name} device in this process: copying one registration to several GPUs at once does not apply`;
    if (ctx.device.native!.ordinal !== 0) return `runs in ${ctx.device.backend}:0's process, which copies one registration to every ${ctx.device.driver.name} device`;
    return true;
  },
);

/** The copy checks, in the order they run (./reference.ts lists them with the other reference checks). */
export const referenceCopyChecks: readonly Check[] = [portableSecondContext, asyncStreamCopy, devicePointerRead, everyGpuAtOnce];
