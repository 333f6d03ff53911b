import { defineChecks } from './check.js';
import { hazardChecks } from './checks/hazards.js';
import { deviceContext } from './context.js';

defineChecks(hazardChecks, deviceContext);
