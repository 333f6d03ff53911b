// Each test file's processes take turns under a timing lock of their own (bindings/timing-lock.ts), not the user's
// one in os.tmpdir(): four files at a time each time the double's copies, and one file's lock held long (a test of
// the lock's wait, a paced probe on a loaded machine) would otherwise make another file's check wait 20 s and end
// as the host's error. The command and its runners, started by a test, inherit it. A test of the default path sets
// or deletes the variable itself.
import { tmpdir } from 'node:os';
import { join } from 'node:path';

process.env.MAPPED_REG_TIMING_LOCK ??= join(tmpdir(), `mapped-reg-test-timing-${process.pid}.lock`);
