import { defineChecks } from './check.js';
import { timingChecks } from './checks/timing.js';
import { deviceContext } from './context.js';

defineChecks(timingChecks, deviceContext);
