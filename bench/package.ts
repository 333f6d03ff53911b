// The package the bench belongs to: its root folder (where scratch/, dist/ and bench/native/ are) and its
// package.json (the name, version and tinybench version the results carry).
import { packageJson, packageRoot } from '../results/package-root.js';

export const root = packageRoot();
export const pkg = packageJson();
