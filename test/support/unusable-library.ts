// What a graphics API's discovery says when its library is not usable (missing, a text file, another library):
// the same cases for OpenCL and Vulkan, each named by the API's own library and error words.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ApiDiscovery } from '../../bindings/api-library.js';

export interface UnusableLibrary {
  /** The name errors begin with: "OpenCL", "Vulkan". */
  api: string;
  discover: (library?: string) => ApiDiscovery;
  /** The variable that names the library, and the library the system loads first. */
  env: string;
  soname: string;
  defaults: readonly string[];
  /** The unversioned name tried after the soname. */
  unversioned: string;
  /** How a test names, and the error says, a shared library of another kind; a symbol the error names as missing. */
  other: string;
  notIt: string;
  symbol: string;
  /** The test file's temporary folder (made in its beforeAll). */
  dir: () => string;
}

export function describeUnusableLibrary(c: UnusableLibrary, title: string): void {
  describe(title, () => {
    it('reports a missing library without throwing', () => {
      const missing = `/nonexistent/${c.soname}`;
      expect(c.discover(missing)).toEqual({ library: null, tried: [missing], devices: [], error: `${c.api}: ${missing} not found (tried ${missing})` });
    });

    it(`takes the library from ${c.env}, and an explicit path over it`, () => {
      const fromEnvPath = `/nonexistent/from-env/${c.soname}`;
      process.env[c.env] = fromEnvPath;
      const fromEnv = c.discover();
      expect(fromEnv.library).toBeNull();
      expect(fromEnv.tried).toEqual([fromEnvPath]);
      expect(fromEnv.error).toBe(`${c.api}: ${fromEnvPath} not found (tried ${fromEnvPath})`);
      expect(c.discover(c.soname).library).toBe(c.soname);
    });

    it(`tries ${c.soname} first, then ${c.unversioned}, by default`, () => {
      expect(c.defaults).toEqual([c.soname, c.unversioned]);
    });

    it('reports a file that is not a shared library clearly', () => {
      const text = join(c.dir(), 'not-a-library.so');
      writeFileSync(text, 'this is a text file, not an ELF shared object\n'.repeat(20));
      let found: ApiDiscovery | undefined;
      expect(() => (found = c.discover(text))).not.toThrow();
      expect(found?.library).toBeNull();
      expect(found?.tried).toEqual([text]);
      expect(found?.devices).toEqual([]);
      expect(found?.error).toContain(`${c.api}: could not load ${text}`);
      expect(found?.error).toMatch(/invalid ELF header|file too short/);
    });

    it(`reports a shared library that is not ${c.other}`, () => {
      const found = c.discover('libc.so.6');
      expect(found.library).toBeNull();
      expect(found.error).toContain(`libc.so.6: ${c.notIt}`);
      expect(found.error).toContain(c.symbol);
    });
  });
}
