// The package's own folder and package.json, found the same way from the sources (under Vitest) and from dist/
// (one folder deeper): the nearest folder above this file whose package.json is this package's.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const PACKAGE_NAME = 'mapped-reg-conformance';

export interface PackageJson {
  name: string;
  version: string;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

function findRoot(): { root: string; pkg: PackageJson } {
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as PackageJson;
      if (pkg.name === PACKAGE_NAME) return { root: dir, pkg };
    } catch {
      // no package.json here (or not one that parses): the folder above
    }
    if (dirname(dir) === dir) throw new Error(`${PACKAGE_NAME}: no package.json of its own above ${fileURLToPath(import.meta.url)}: the package is incomplete`);
  }
}

let found: { root: string; pkg: PackageJson } | undefined;

/** The package's root folder (where package.json, dist/, results/ and scratch/ are). */
export function packageRoot(): string {
  found ??= findRoot();
  return found.root;
}

/** The package's own package.json. */
export function packageJson(): PackageJson {
  found ??= findRoot();
  return found.pkg;
}
