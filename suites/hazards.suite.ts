import { defineChecks } from './define-checks.js';
import { hazardChecks } from './hazards/index.js';
import { deviceContext } from './context.js';

defineChecks(hazardChecks, deviceContext);
