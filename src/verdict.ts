// The spec's types (Spoc_core.Mapped_registration), as discriminated unions that keep its constructor names.

/** Why a device is refused. */
export type Refusal =
  /** The device shares system memory: registration gains nothing. */
  | { readonly kind: 'Integrated_gpu' }
  /** The backend registers host memory but did not say whether the device is integrated. */
  | { readonly kind: 'Device_kind_unknown' }
  /** Registering is known to harm the machine on this backend. Never attempted. */
  | { readonly kind: 'Kernel_hazard'; readonly reason: string }
  /** No measurement shows the capability on this backend. */
  | { readonly kind: 'Not_measured'; readonly reason: string }
  /** The driver accepted the registration and the copy returned bytes that differ from the file. */
  | { readonly kind: 'Wrong_bytes' };

export type Verdict =
  | { readonly kind: 'Usable' }
  /** The device reads host memory directly: copy from the mapping, register nothing. */
  | { readonly kind: 'Not_needed'; readonly reason: string }
  | { readonly kind: 'Refused'; readonly refusal: Refusal }
  /** Bytes right, but the registered copy was slower than the staged one by more than the margin. */
  | { readonly kind: 'Too_slow'; readonly reason: string }
  /** No verdict (an operation raised, region too small, reference differs, clock invalid, ...). */
  | { readonly kind: 'Inconclusive'; readonly reason: string }
  /** A window the probe registered could not be released: never unmap the map given to the probe. */
  | { readonly kind: 'Still_registered'; readonly reason: string };

/** Result of staticVerdict. */
export type Static = { readonly kind: 'Decided'; readonly verdict: Verdict } | { readonly kind: 'Self_test_required' };

// Constructors, named as in the spec.
export const Usable: Verdict = { kind: 'Usable' };
export const Not_needed = (reason: string): Verdict => ({ kind: 'Not_needed', reason });
export const Refused = (refusal: Refusal): Verdict => ({ kind: 'Refused', refusal });
export const Too_slow = (reason: string): Verdict => ({ kind: 'Too_slow', reason });
export const Inconclusive = (reason: string): Verdict => ({ kind: 'Inconclusive', reason });
export const Still_registered = (reason: string): Verdict => ({ kind: 'Still_registered', reason });
export const Integrated_gpu: Refusal = { kind: 'Integrated_gpu' };
export const Device_kind_unknown: Refusal = { kind: 'Device_kind_unknown' };
export const Kernel_hazard = (reason: string): Refusal => ({ kind: 'Kernel_hazard', reason });
export const Not_measured = (reason: string): Refusal => ({ kind: 'Not_measured', reason });
export const Wrong_bytes: Refusal = { kind: 'Wrong_bytes' };
export const Decided = (verdict: Verdict): Static => ({ kind: 'Decided', verdict });
export const Self_test_required: Static = { kind: 'Self_test_required' };

export function refusalToString(r: Refusal): string {
  switch (r.kind) {
    case 'Integrated_gpu':
    case 'Device_kind_unknown':
    case 'Wrong_bytes':
      return r.kind;
    case 'Kernel_hazard':
    case 'Not_measured':
      return `${r.kind} (${r.reason})`;
  }
}

export function verdictToString(v: Verdict): string {
  switch (v.kind) {
    case 'Usable':
      return 'Usable';
    case 'Refused':
      return `Refused (${refusalToString(v.refusal)})`;
    case 'Not_needed':
    case 'Too_slow':
    case 'Inconclusive':
    case 'Still_registered':
      return `${v.kind} (${v.reason})`;
  }
}

/** A verdict's kind, with its refusal's name: `Usable`, `Refused (Kernel_hazard)` (no reason). */
export function verdictName(v: Verdict): string {
  return v.kind === 'Refused' ? `Refused (${v.refusal.kind})` : v.kind;
}

/**
 * A verdict in words for a line of text, with one level of parentheses: `Refused (Kernel_hazard): why`,
 * `Not_needed: why`, `Usable` (verdictToString nests them: `Refused (Kernel_hazard (why (more)))`).
 */
export function verdictWords(v: Verdict): string {
  const reason = v.kind === 'Refused' ? ('reason' in v.refusal ? v.refusal.reason : undefined) : 'reason' in v ? v.reason : undefined;
  return reason ? `${verdictName(v)}: ${reason}` : verdictName(v);
}

/** A static verdict as text: the decided verdict's, or `Self_test_required`. */
export function staticToString(s: Static): string {
  return s.kind === 'Decided' ? verdictToString(s.verdict) : 'Self_test_required';
}

/** A verdict as data (the reports' JSON): its kind, the refusal's name and any reason, and its text. */
export interface VerdictJson {
  kind: Verdict['kind'];
  refusal?: string;
  reason?: string;
  text: string;
}

export function verdictJson(v: Verdict): VerdictJson {
  const text = verdictToString(v);
  if (v.kind === 'Refused') return { kind: v.kind, refusal: v.refusal.kind, ...('reason' in v.refusal ? { reason: v.refusal.reason } : {}), text };
  return 'reason' in v ? { kind: v.kind, reason: v.reason, text } : { kind: v.kind, text };
}

/** The verdict a VerdictJson was made from (what a device's process reported, read back): verdictJson's inverse. */
export function verdictFromJson(j: VerdictJson): Verdict {
  const reason = j.reason ?? '';
  switch (j.kind) {
    case 'Usable':
      return Usable;
    case 'Refused':
      switch (j.refusal) {
        case 'Integrated_gpu':
          return Refused(Integrated_gpu);
        case 'Device_kind_unknown':
          return Refused(Device_kind_unknown);
        case 'Wrong_bytes':
          return Refused(Wrong_bytes);
        case 'Kernel_hazard':
          return Refused(Kernel_hazard(reason));
        case 'Not_measured':
          return Refused(Not_measured(reason));
        default:
          throw new RangeError(`unknown refusal ${String(j.refusal)}`);
      }
    case 'Not_needed':
    case 'Too_slow':
    case 'Inconclusive':
    case 'Still_registered':
      return { kind: j.kind, reason };
  }
}

/**
 * True only for what the self-test established about the machine: Usable and Refused Wrong_bytes. Static
 * verdicts cost nothing to recompute (and some rest on a query that can fail for a moment); Too_slow,
 * Inconclusive and Still_registered depend on load or on a transient failure.
 */
export function cacheable(v: Verdict): boolean {
  return v.kind === 'Usable' || (v.kind === 'Refused' && v.refusal.kind === 'Wrong_bytes');
}
