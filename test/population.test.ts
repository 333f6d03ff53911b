// history compare's population of a model (history/fleet-compare.ts populationShifts, issue 37): each device's
// registered / page-locked, OLD's driver against NEW's, paired by device, decided as one by results/decision.ts.
import { describe, expect, it } from 'vitest';
import { POPULATION_MIN, populationShifts } from '../history/fleet-compare.js';

/** `count` devices of one model whose ratio went from about 1 to `after`, each by its own noise (a fixed pattern). */
function fleet(count: number, after: number, spread: number, name = 'NVIDIA H200'): { name: string; oldDriver: string; newDriver: string; old: number; neu: number }[] {
  return Array.from({ length: count }, (_, i) => ({ name, oldDriver: 'CUDA 13.0', newDriver: 'CUDA 13.1', old: 1 + spread * Math.sin(i * 1.7), neu: after * (1 + spread * Math.cos(i * 2.3)) }));
}

describe('populationShifts', () => {
  it('a shift of the whole population beyond --max-drop is a regression, though each device moves by its own noise', () => {
    const [p] = populationShifts(fleet(40, 0.86, 0.05), 0.1);
    expect(p).toMatchObject({ name: 'NVIDIA H200', driver: { old: 'CUDA 13.0', new: 'CUDA 13.1' }, devices: 40, decision: { outcome: 'regression' } });
    // each device alone: many fall by less than the limit
    expect(fleet(40, 0.86, 0.05).filter((d) => 1 - d.neu / d.old <= 0.1).length).toBeGreaterThan(5);
  });

  it('one noisy device, however far it fell, is not the population: no shift', () => {
    const devices = fleet(40, 1, 0.03);
    devices[7] = { ...devices[7]!, neu: 0.4 };
    const [p] = populationShifts(devices, 0.1);
    expect(p!.decision.outcome).toBe('pass');
    expect(Math.abs(p!.decision.drop)).toBeLessThan(0.03);
  });

  it('models and driver pairs apart; fewer than POPULATION_MIN devices are left to their own judgement', () => {
    const shifts = populationShifts([...fleet(10, 1, 0.01), ...fleet(10, 0.5, 0.01, 'NVIDIA A100'), ...fleet(POPULATION_MIN - 1, 0.5, 0.01, 'NVIDIA L4')], 0.1);
    expect(shifts.map((p) => [p.name, p.decision.outcome])).toEqual([
      ['NVIDIA A100', 'regression'],
      ['NVIDIA H200', 'pass'],
    ]);
  });
});
