// cli/stream-text.ts: a device process's output decoded as one UTF-8 stream. A pipe may cut a character's bytes
// across two reads; each piece decoded on its own would turn both halves into U+FFFD.
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { onText } from '../cli/stream-text.js';

/** What onText hands on of `chunks`, written one by one and ended. */
async function heard(chunks: Buffer[]): Promise<string> {
  const stream = new PassThrough();
  let text = '';
  onText(stream, (t) => (text += t));
  const ended = new Promise((done) => stream.on('end', done));
  for (const c of chunks) stream.write(c);
  stream.end();
  await ended;
  return text;
}

describe('onText', () => {
  it('a character cut across two reads (ü, 日, 😀 at every cut) comes back whole', async () => {
    const said = 'ü日本 😀 ]]> done\n';
    const bytes = Buffer.from(said, 'utf8');
    for (let cut = 1; cut < bytes.length; cut++) expect(await heard([bytes.subarray(0, cut), bytes.subarray(cut)]), `cut at ${cut}`).toBe(said);
    // one byte a read
    expect(await heard([...bytes].map((b) => Buffer.from([b])))).toBe(said);
  });

  it('the control: decoded piece by piece, the same cut loses the character', () => {
    const bytes = Buffer.from('ü', 'utf8');
    expect(bytes.subarray(0, 1).toString() + bytes.subarray(1).toString()).not.toBe('ü');
  });
});
