#!/usr/bin/env node
// The command's entry (the package's bin): a run's first device runner is started before anything else
// (cli/spare-runner.ts), so that its Node start and its modules overlap the command's own load; then the command
// (cli/command.ts) is loaded and runs. A stop signal meanwhile ends it at once, saying so (cli/signals.ts).
import { runsChecks, startSpareRunner } from './spare-runner.js';
import { installEarlyStop } from './signals.js';

// a stop signal from here on says what it stopped (nothing yet) and ends the spare runner with the command
if (runsChecks(process.argv.slice(2))) installEarlyStop();
startSpareRunner(process.argv.slice(2));
await import('./command.js');
