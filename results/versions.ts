// The order of driver versions, for every view that lists them oldest first (the report's table and charts, the
// history page's driver versions).

/**
 * Natural order of version strings: runs of digits compare as numbers (7.2.4 < 7.2.10, 13.0 < 13.1), anything
 * else as text; a version that is a prefix of the other comes first.
 */
export function compareVersions(a: string, b: string): number {
  const ta = a.match(/\d+|\D+/g) ?? [];
  const tb = b.match(/\d+|\D+/g) ?? [];
  for (let i = 0; i < Math.min(ta.length, tb.length); i++) {
    const x = ta[i]!;
    const y = tb[i]!;
    const dx = /^\d/.test(x);
    const dy = /^\d/.test(y);
    if (dx && dy) {
      // as numbers without loss of precision: strip leading zeros, then longer is larger
      const nx = x.replace(/^0+(?=\d)/, '');
      const ny = y.replace(/^0+(?=\d)/, '');
      if (nx.length !== ny.length) return nx.length - ny.length;
      if (nx !== ny) return nx < ny ? -1 : 1;
      if (x.length !== y.length) return x.length - y.length; // 07 after 7, for a total order
    } else if (dx !== dy) {
      return dx ? -1 : 1; // a number before text
    } else if (x !== y) {
      return x < y ? -1 : 1;
    }
  }
  return ta.length - tb.length;
}
