// The verdict model (spec: Spoc_core.Mapped_registration). No FFI here: bindings supply devices and ops.
export * from './verdict.js';
export * from './device.js';
export * from './ops.js';
export * from './probe.js';
export * from './fatal.js';
