// static.verdict: the static verdict of the device; for a refused device, the proof that no op was reached.
import { probe, staticToString, staticVerdict, verdictToString, verdictWords } from '../../src/index.js';
import { plural } from '../../results/format.js';
import type { Check } from '../check.js';
import { STATIC_VERDICT, type StaticData } from './data.js';

export { STATIC_VERDICT, type StaticData } from './data.js';

/** A map that throws when read: a probe that reads it has gone past the static verdict. */
const untouchable = {
  address: 0n,
  get bytes(): Uint8Array {
    throw new Error('the map was read');
  },
};

export const staticChecks: Check[] = [
  {
    id: STATIC_VERDICT,
    suite: 'static',
    title: 'the static verdict; a refused device reaches no op',
    applies: () => true,
    run: ({ device }) => {
      const s = staticVerdict(device.device);
      const text = staticToString(s);
      const data: StaticData = { static: text, kind: s.kind === 'Decided' ? s.verdict.kind : 'Self_test_required' };
      if (s.kind === 'Self_test_required' || s.verdict.kind !== 'Refused') {
        return { expected: 'a static verdict', observed: text, data };
      }
      // The proof: probe the device with its ops replaced by a spy and a map that cannot be read.
      let opened = 0;
      const spied = { ...device.device, withOps: <T>(): T => { opened += 1; throw new Error('ops opened'); } };
      const v = probe(spied, untouchable, new Uint8Array(0));
      const same = verdictToString(v) === text;
      return {
        status: opened === 0 && same ? 'pass' : 'fail',
        expected: `${text}, with no op reached and the map not read`,
        // one level of parentheses: the refusal's reason is told here once (the skips name the refusal alone)
        observed: `${verdictWords(v)}; ${opened === 0 ? 'the driver was never called' : `the driver's ops were opened ${plural(opened, 'time')}`}`,
        data: { ...data, opsOpened: opened } satisfies StaticData,
      };
    },
  },
];
