import { defineChecks } from './define-checks.js';
import { staticChecks } from './checks/static.js';
import { deviceContext } from './context.js';

defineChecks(staticChecks, deviceContext);
