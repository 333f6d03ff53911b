// A reset of the device's context while a range is registered: the registration goes with the context, and the
// range registers and releases again. It resets the context the other checks use: ./index.ts runs it last. What
// the H200 did: docs/hazards.md.
import { MAP, PROT } from '../../bindings/libc.js';
import { registrations } from '../../src/index.js';
import type { CheckContext, Observation } from '../check.js';
import { withTrackedOps } from '../context.js';
import { handOverTruncateEarly } from './file-changes.js';
import { type Code, FILE_BYTES, addressText, driverCall, hazard, notRegistered, succeeded, codeText, withFile, withMapping } from './harness.js';

function contextReset(ctx: CheckContext): Observation {
  // the truncation check, next and last, has its child (a process and a context of its own, started early) run
  // beside this one: its file and arguments are handed over now (./file-changes.ts)
  handOverTruncateEarly(ctx);
  const native = ctx.device.native!;
  const how = native.kit.contextReset.call;
  const notRegisteredCode = notRegistered(ctx).code;
  const expected = `after ${how} while registered, unregister says not registered (${notRegisteredCode}) and the range registers and releases again`;
  return withFile(ctx.options.scratchDir, FILE_BYTES, (file) =>
    withMapping(ctx, file.fd, FILE_BYTES, PROT.READ, MAP.SHARED, (m) => {
      // Left registered on purpose. withCudaOps then keeps its primary context retain (the last release would
      // drop the registration behind our back), so what the reset does is what is seen.
      let flags = 0;
      const first = withTrackedOps(ctx, FILE_BYTES, (ops) => {
        flags = ops.registerFlags;
        return driverCall(() => ops.registerWithFlags(m, flags));
      });
      if (first.code !== 0) {
        return { status: 'fail', expected, observed: `register ${codeText(first)}: nothing to reset under`, data: { register: first.code, registerName: first.name } };
      }
      const reset = driverCall(() => native.kit.contextReset.reset());
      const after = withTrackedOps(ctx, FILE_BYTES, (ops) => {
        const unregister = driverCall(() => ops.unregister(m));
        if (unregister.code === 0) return { unregister };
        const again = driverCall(() => ops.registerWithFlags(m, flags));
        const release = succeeded(again) ? driverCall(() => ops.unregister(m)) : undefined;
        // Not released at the first try: once more, as any check cleans up (first-try release is judged elsewhere).
        const retry = release && !succeeded(release) ? driverCall(() => ops.unregister(m)) : undefined;
        return { unregister, again, release, retry };
      });
      // The driver said it no longer held the range, then took it again and released it: the entry of the first
      // registration, whose unregister failed, is stale. Otherwise it stays (and the mapping with it).
      const gone = after.unregister.code !== 0 && succeeded(after.again) && (succeeded(after.release) || succeeded(after.retry));
      if (gone) registrations.remove(m);
      let retain: Code | undefined;
      const releaseKept = native.kit.contextReset.releaseKept;
      if (releaseKept) {
        // (CUDA) The retain withCudaOps kept for the first registration: a reset does not release it. Given back once
        // nothing of this range is held any more (else the last release could drop what the table still holds).
        if (!registrations.isPinned(m)) retain = driverCall(releaseKept);
        else ctx.log(`the primary context retain kept for ${addressText(m)} stays: the range may still be registered`);
      }
      const good = succeeded(reset) && after.unregister.code === notRegisteredCode && gone && succeeded(after.release);
      const parts = [
        `register 0`,
        `${how} ${codeText(reset)}`,
        `unregister after the reset ${codeText(after.unregister)}`,
        ...(after.again ? [`registered again ${codeText(after.again)}`] : []),
        ...(after.release ? [`released ${codeText(after.release)}`] : []),
        ...(after.retry ? [`released on a retry ${codeText(after.retry)}`] : []),
        ...(retain ? [`the kept context retain released ${codeText(retain)}`] : []),
      ];
      return {
        status: good ? 'pass' : 'fail',
        expected,
        observed: parts.join('; '),
        ...(good
          ? {}
          : {
              message: !succeeded(reset)
                ? `${how} failed`
                : after.unregister.code === 0
                  ? 'the registration survived the reset'
                  : after.unregister.code !== notRegisteredCode
                    ? 'unregister after the reset failed with another code than not registered'
                    : 'the range could not be registered and released again',
            }),
        data: {
          reset: reset.code,
          resetName: reset.name,
          unregister: after.unregister.code,
          unregisterName: after.unregister.name,
          ...(after.again ? { again: after.again.code, againName: after.again.name } : {}),
          ...(after.release ? { release: after.release.code, releaseName: after.release.name } : {}),
          ...(after.retry ? { retry: after.retry.code } : {}),
          ...(retain ? { retainRelease: retain.code } : {}),
        },
      };
    }),
  );
}

export const contextResetCheck = hazard('hazard.context_reset', 'after a context reset the registration is gone, and the range registers again', contextReset);
