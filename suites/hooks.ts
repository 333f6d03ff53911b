// The test hooks' addressing, shared by the command (cli/select-devices.ts) and the checks (suites/check.ts): here, below
// both, so that a suite never imports the command. No Vitest and no driver here.

/** A test hook for one device: `device/check` applies to that device only, a bare `check` to every device. */
export function hookFor(hook: string | undefined, device: string): string | undefined {
  if (!hook?.includes('/')) return hook;
  return hook.startsWith(`${device}/`) ? hook.slice(device.length + 1) : undefined;
}

/**
 * Whether a discovery test hook applies to the discovering process of `backends`: `@discovery` to every one,
 * `@discovery:<backend>` to the one whose group holds that backend alone (a slow group, as an OpenCL ICD is).
 */
export function discoveryHookFor(hook: string | undefined, backends: readonly string[]): boolean {
  if (hook === '@discovery') return true;
  return hook?.startsWith('@discovery:') === true && backends.includes(hook.slice('@discovery:'.length));
}
