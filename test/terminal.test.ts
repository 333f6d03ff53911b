import { describe, expect, it } from 'vitest';
import { Progress } from '../reporters/terminal.js';

const events = (p: Progress): void => {
  p.event('cuda:0', { type: 'start', id: 'static.verdict' });
  p.event('cuda:0', { type: 'result', id: 'static.verdict', status: 'pass', observed: 'Self_test_required' });
  p.event('cpu', { type: 'result', id: 'probe.verdict', status: 'skip', message: 'decided statically' });
  p.event('cuda:0', { type: 'start', id: 'probe.release' });
  p.event('cuda:0', { type: 'result', id: 'probe.release', status: 'crash', message: 'the check killed its process: SIGSEGV' });
  p.event('cuda:0', { type: 'end' });
  p.finish();
};

describe('progress', () => {
  it('not on a terminal: one plain line per check result, no escape sequences', () => {
    let text = '';
    events(new Progress((t) => (text += t), false, ['cuda:0', 'cpu']));
    const lines = text.trimEnd().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^ {2}\[\d+\.\d s\] cuda:0 static\.verdict pass - Self_test_required$/);
    expect(lines[1]).toMatch(/cuda:0 probe\.release crash - the check killed its process: SIGSEGV/);
    // a skip is told when its device is done (here at finish: cpu never ended), with its reason
    expect(lines[2]).toMatch(/cpu probe\.verdict skip - decided statically$/);
    expect(text).not.toMatch(/\x1b/);
  });

  it('on a terminal: a status line per device redrawn in place; only what did not pass stays printed', () => {
    let text = '';
    events(new Progress((t) => (text += t), true, ['cuda:0', 'cpu']));
    expect(text).toMatch(/\x1b\[3A\x1b\[0J/); // two devices and the elapsed line, redrawn
    const last = text.slice(text.lastIndexOf('\x1b[0J') + 4);
    expect(last).toMatch(/cuda:0\s+2 checks\s+1 pass\s+0 warn\s+1 fail\s+0 skip\s+done/);
    expect(last).toMatch(/cpu\s+1 checks\s+0 pass\s+0 warn\s+0 fail\s+1 skip\s+done/);
    // the crash was printed for good; the pass was not
    expect(text).toMatch(/cuda:0 probe\.release crash/);
    expect(text).not.toMatch(/static\.verdict pass - /);
  });

  it('not on a terminal: a device\'s skipped checks are one line per reason when the device is done', () => {
    let text = '';
    const p = new Progress((t) => (text += t), false, ['cpu']);
    p.event('cpu', { type: 'result', id: 'static.verdict', status: 'pass', observed: 'Not_needed' });
    for (const id of ['hazard.a', 'hazard.b', 'hazard.c']) p.event('cpu', { type: 'result', id, status: 'skip', message: 'no registration on cpu' });
    p.event('cpu', { type: 'result', id: 'probe.verdict', status: 'skip', message: 'decided statically' });
    expect(text.trimEnd().split('\n')).toHaveLength(1); // nothing told before the end
    p.event('cpu', { type: 'end' });
    p.finish();
    const lines = text.trimEnd().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[1]).toMatch(/cpu 3 checks skip - no registration on cpu$/);
    expect(lines[2]).toMatch(/cpu probe\.verdict skip - decided statically$/);
  });
});
