// Every figure a results file holds is a finite number: JSON has no Infinity or NaN (JSON.stringify writes them as
// null, which the schema then refuses, and with it every command that reads the file back). The run's results are
// held to this, and to the schema, before they are written (cli/write-outputs.ts).

/** The first number in `value` that is not finite, as its JSON pointer and value (`/devices/0/timing/ratio = NaN`); undefined when none. */
export function nonFiniteFigure(value: unknown, at = ''): string | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? undefined : `${at || '/'} = ${String(value)}`;
  if (typeof value !== 'object' || value === null) return undefined;
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return undefined; // a Date and the like: written as they say
  const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v] as const) : Object.entries(value);
  for (const [k, v] of entries) {
    const found = nonFiniteFigure(v, `${at}/${k}`);
    if (found !== undefined) return found;
  }
  return undefined;
}
