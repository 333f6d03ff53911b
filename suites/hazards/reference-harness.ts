// What the reference checks share (./reference-attributes.ts, ./reference-repetition.ts, ./reference-negatives.ts):
// the promises hip-tests and the CUDA documentation test, each a hazard check on a file-backed mapping. They apply
// where the device registers and its module states a reference kit (bindings/reference-kit.ts). The page that
// lists them beside the reference tests they answer: docs/reference-checks.md.
import type { AttributeReading, ReferenceAttribute, ReferenceKit } from '../../bindings/reference-kit.js';
import type { Check, CheckContext, Observation } from '../check.js';
import { hasRegistration } from './harness.js';

/** The device's reference kit, or why there is none. */
export function referenceKit(ctx: CheckContext): ReferenceKit | string {
  const applies = hasRegistration(ctx);
  if (applies !== true) return applies;
  return ctx.device.native?.kit.reference ?? `${ctx.device.backend}'s module states no reference kit`;
}

/**
 * A check on the device's reference kit: suite `hazards`, applies where the device has a reference kit and `where`
 * says yes (true, or the reason it does not apply: a named skip). `run` is given the kit; the runner asks
 * `applies` first, so `where` is not asked again there.
 */
export function referenceCheckWhere(
  id: string,
  title: string,
  where: (ctx: CheckContext, kit: ReferenceKit) => true | string,
  run: (ctx: CheckContext, kit: ReferenceKit) => Observation,
): Check {
  return {
    id,
    suite: 'hazards',
    title,
    applies: (ctx) => {
      const kit = referenceKit(ctx);
      return typeof kit === 'string' ? kit : where(ctx, kit);
    },
    run: (ctx) => {
      const kit = referenceKit(ctx);
      if (typeof kit === 'string') throw new Error(`${id}: ${kit}`);
      return run(ctx, kit);
    },
  };
}

/**
 * A reference check that reads `attributes`: applies where, for each, the driver has it (an attribute newer than
 * the runtime, or one the driver never had, is a skip with its reason).
 */
export function referenceCheck(id: string, title: string, attributes: readonly ReferenceAttribute[], run: (ctx: CheckContext, kit: ReferenceKit) => Observation): Check {
  return referenceCheckWhere(
    id,
    title,
    (_ctx, kit) => {
      for (const a of attributes) {
        const r = kit.attribute(a);
        if ('absent' in r) return r.absent;
      }
      return true;
    },
    run,
  );
}

/** `CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED (99) = 1`, or the error its query gave. */
export function readingText(r: AttributeReading): string {
  if ('absent' in r) return r.absent;
  return 'value' in r ? `${r.attribute} = ${r.value}` : `${r.attribute}: ${r.error}`;
}

/** The reading's value, or undefined when the query failed. */
export const readingValue = (r: AttributeReading): number | undefined => ('value' in r ? r.value : undefined);

/** The reading as the result's data keeps it. */
export function readingData(r: AttributeReading): Record<string, unknown> {
  if ('absent' in r) return { absent: r.absent };
  return 'value' in r ? { attribute: r.attribute, value: r.value } : { attribute: r.attribute, error: r.error };
}
