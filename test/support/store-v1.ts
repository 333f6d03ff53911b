// A history store as version 1 made it: the tables of `made` (a store of version 2) less the columns version 2 added,
// written to `db`. The history tests read such a store as it is (no add) and refuse to add to it.
import { DuckDBInstance } from '@duckdb/node-api';

export async function storeAsVersion1(made: string, db: string): Promise<void> {
  const instance = await DuckDBInstance.create(made);
  const c = await instance.connect();
  await c.run(`ATTACH '${db}' AS v1`);
  await c.run(`CREATE TABLE v1.meta AS SELECT key, CASE WHEN key = 'version' THEN '1' ELSE value END AS value FROM meta`);
  await c.run(`CREATE TABLE v1.runs AS SELECT * FROM runs`);
  await c.run(`CREATE TABLE v1.devices AS SELECT * EXCLUDE (page_locked, pl_ratio, busy, machine) FROM devices`);
  await c.run(`CREATE TABLE v1.checks AS SELECT * FROM checks`);
  await c.run('DETACH v1');
  c.closeSync();
  instance.closeSync();
}
