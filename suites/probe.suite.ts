import { defineChecks } from './define-checks.js';
import { probeChecks } from './checks/probe.js';
import { deviceContext } from './context.js';

defineChecks(probeChecks, deviceContext);
