// The Vulkan backend: discovery only (bindings/vulkan.ts; the model refuses registration on it), in the group of
// the backends that never register.
import type { BackendModule } from '../backend.js';
import { VULKAN_LIBRARY_ENV, discoverVulkan } from '../vulkan.js';
import { apiDiscovery } from './api.js';

export const vulkan = {
  id: 'vulkan',
  framework: 'Vulkan',
  libraryEnv: VULKAN_LIBRARY_ENV,
  group: 'discovery-only',
  deviceId: 'vulkan:\\d+',
  registers: false,
  discover: () => apiDiscovery('vulkan', 'Vulkan', discoverVulkan()),
} as const satisfies BackendModule;
