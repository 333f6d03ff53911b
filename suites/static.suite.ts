import { defineChecks } from './check.js';
import { staticChecks } from './checks/static.js';
import { deviceContext } from './context.js';

defineChecks(staticChecks, deviceContext);
