// A child process's output as text: decoded as one UTF-8 stream (setEncoding, Node's StringDecoder), so that a
// character whose bytes a pipe delivers in two reads comes back whole, never as two U+FFFD.
import type { Readable } from 'node:stream';

/** Calls `onText` with each piece of `stream`'s text, every character whole. */
export function onText(stream: Readable, onText: (text: string) => void): void {
  stream.setEncoding('utf8');
  stream.on('data', (text: string) => onText(text));
}
