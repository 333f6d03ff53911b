import { defineChecks } from './define-checks.js';
import { timingChecks } from './checks/timing.js';
import { deviceContext } from './context.js';

defineChecks(timingChecks, deviceContext);
