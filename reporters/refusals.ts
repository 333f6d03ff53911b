// Each refusal in plain words, and where to read more: a verdict's name (Kernel_hazard, Not_measured, ...) is the
// model's, and a first run should not need the model to understand why a device was left alone.
import type { Refusal } from '../src/verdict.js';
import type { VerdictJson } from '../results/types.js';

/** Where the refusals are explained, with their sources (a path of the repository and of the installed package). */
export const REFUSALS_DOC = 'docs/verdicts.md, "Refusals in plain words"';

const PLAIN: { readonly [K in Refusal['kind']]: string } = {
  Integrated_gpu: 'this GPU shares the machine\'s memory, so registering it would gain nothing; nothing was registered',
  Device_kind_unknown: 'the driver could not say whether this GPU is integrated or discrete, and the suite does not guess; nothing was registered',
  Kernel_hazard: 'registering host memory through this backend has crashed the operating system\'s kernel on other machines, so it is never tried here',
  Not_measured: 'no measurement shows that this backend can copy from a registered file mapping, so it is not trusted; nothing was registered',
  Wrong_bytes: 'the driver said the registration worked, but the GPU read bytes that are not the file\'s: a false success',
};

/** Why a refused device was refused, in plain words, and where to read more; undefined for any other verdict. */
export function refusalInPlainWords(v: Pick<VerdictJson, 'kind' | 'refusal'>): string | undefined {
  if (v.kind !== 'Refused' || v.refusal === undefined) return undefined;
  const plain = (PLAIN as Record<string, string | undefined>)[v.refusal];
  // a refusal of a later model that this version does not know still points to the page
  return `refused: ${plain ?? 'see the reason above'} (read more: ${REFUSALS_DOC})`;
}

/**
 * The one line the terminal gives a refused device (its table's verdict column names the refusal): why, in the
 * refusal's own reason where it has one (it names the backend: "registering host memory through Vulkan
 * crashed..."), else in the plain words above, and where to read more; undefined for any other verdict.
 */
export function refusalLine(v: Pick<VerdictJson, 'kind' | 'refusal' | 'reason'>): string | undefined {
  if (v.kind !== 'Refused' || v.refusal === undefined) return undefined;
  return v.reason ? `refused: ${v.reason} (read more: ${REFUSALS_DOC})` : refusalInPlainWords(v);
}
