// A history store as an older version made it: the tables of `made` (a store of the current version) less the
// columns the versions after `version` added (history/columns.ts), written to `db`. The history tests read such a
// store as it is (no add), and add to it (an upgrade).
import { DuckDBInstance } from '@duckdb/node-api';
import { ADDED_COLUMNS } from '../../history/columns.js';

export async function storeAsVersion(made: string, db: string, version: number): Promise<void> {
  const later = Object.entries(ADDED_COLUMNS)
    .filter(([v]) => Number(v) > version)
    .flatMap(([, cols]) => cols.map((col) => col.split(' ')[0]!));
  const instance = await DuckDBInstance.create(made);
  const c = await instance.connect();
  await c.run(`ATTACH '${db}' AS old`);
  await c.run(`CREATE TABLE old.meta AS SELECT key, CASE WHEN key = 'version' THEN '${version}' ELSE value END AS value FROM meta`);
  await c.run(`CREATE TABLE old.runs AS SELECT * FROM runs`);
  await c.run(`CREATE TABLE old.devices AS SELECT * ${later.length ? `EXCLUDE (${later.join(', ')})` : ''} FROM devices`);
  await c.run(`CREATE TABLE old.checks AS SELECT * FROM checks`);
  await c.run('DETACH old');
  c.closeSync();
  instance.closeSync();
}

/** A store as version 1 made it (without the columns of 2 and 3). */
export const storeAsVersion1 = (made: string, db: string): Promise<void> => storeAsVersion(made, db, 1);
