// The test hooks' addressing, shared by the command (cli/select-devices.ts) and the checks (suites/check.ts): here, below
// both, so that a suite never imports the command. No Vitest and no driver here.

/** A test hook for one device: `device/check` applies to that device only, a bare `check` to every device. */
export function hookFor(hook: string | undefined, device: string): string | undefined {
  if (!hook?.includes('/')) return hook;
  return hook.startsWith(`${device}/`) ? hook.slice(device.length + 1) : undefined;
}
