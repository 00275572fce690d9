import type { Db } from './db.js';

/** One WebDriver session of /wd/hub, as the lab keeps it: never its session id, which is the client's secret. */
export interface WebDriverRunRow {
  id: string;
  organizationId: string;
  allocationId: string;
  testResultId: string | null;
  createdBy: string | null;
  startedAt: number;
  endedAt: number | null;
  endReason: string | null;
}

const COLUMNS =
  'id, organization_id AS organizationId, allocation_id AS allocationId, test_result_id AS testResultId, created_by AS createdBy, ' +
  'started_at AS startedAt, ended_at AS endedAt, end_reason AS endReason';

export function webDriverRunStore(db: Db) {
  const insert = db.prepare(
    `INSERT INTO webdriver_runs (id, organization_id, allocation_id, test_result_id, created_by, started_at)
     VALUES (@id, @organizationId, @allocationId, @testResultId, @createdBy, @startedAt)`,
  );
  const end = db.prepare('UPDATE webdriver_runs SET ended_at = ?, end_reason = ? WHERE id = ? AND ended_at IS NULL');
  const running = db.prepare<[], WebDriverRunRow>(`SELECT ${COLUMNS} FROM webdriver_runs WHERE ended_at IS NULL ORDER BY started_at`);
  const ofAllocation = db.prepare<[string], WebDriverRunRow>(`SELECT ${COLUMNS} FROM webdriver_runs WHERE allocation_id = ? ORDER BY started_at DESC LIMIT 1`);
  return {
    insert: (row: Omit<WebDriverRunRow, 'endedAt' | 'endReason'>) => void insert.run(row),
    /** Ends a running row; false when it had ended already. */
    end: (id: string, at: number, reason: string) => end.run(at, reason, id).changes === 1,
    running: () => running.all(),
    /** The run that holds (or held) an allocation, if a WebDriver session made it. */
    ofAllocation: (allocationId: string) => ofAllocation.get(allocationId),
  };
}
