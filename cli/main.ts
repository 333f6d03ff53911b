#!/usr/bin/env node
// The command's entry (the package's bin): a run's first device runner is started before anything else
// (cli/spare-runner.ts), so that its Node start and its modules overlap the command's own load; then the command
// (cli/command.ts) is loaded and runs.
import { startSpareRunner } from './spare-runner.js';

startSpareRunner(process.argv.slice(2));
await import('./command.js');
