// The OpenCL backend: discovery only (bindings/opencl.ts), in the group of the backends that never register.
import type { BackendModule } from '../backend.js';
import { OPENCL_LIBRARY_ENV, discoverOpenCL } from '../opencl.js';
import { apiDiscovery } from './api.js';

export const opencl = {
  id: 'opencl',
  framework: 'OpenCL',
  libraryEnv: OPENCL_LIBRARY_ENV,
  group: 'discovery-only',
  deviceId: 'opencl:\\d+',
  registers: false,
  discover: () => apiDiscovery('opencl', 'OpenCL', discoverOpenCL()),
} as const satisfies BackendModule;
