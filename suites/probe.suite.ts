import { defineChecks } from './check.js';
import { probeChecks } from './checks/probe.js';
import { deviceContext } from './context.js';

defineChecks(probeChecks, deviceContext);
