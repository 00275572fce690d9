import { uniqueCreatedAt } from '../domain/time.js';
import type { Db } from './db.js';

/** A free-form JSON object, as the reporter sent it. */
export type JsonObject = Record<string, unknown>;

/** The fields a reporter sets; the rest of a row is the server's. */
export interface TestResultFields {
  name: string;
  userAgent: string | null;
  status: string;
  /** Why the run ended with its status, as its client or reporter said. */
  reason: string | null;
  git: JsonObject | null;
  tags: string[];
  environment: JsonObject | string | null;
  stats: JsonObject | null;
  sessionId: string | null;
  startedAt: number | null;
  finishedAt: number | null;
}

export interface TestResultRow extends TestResultFields {
  id: string;
  organizationId: string;
  createdBy: string | null;
  createdAt: number;
  updatedAt: number;
  /** When the lab removed the result's files, kept past the lab's retention period; null while it keeps them. */
  filesRemovedAt: number | null;
}

export interface AssetRow {
  id: string;
  testResultId: string;
  name: string;
  contentType: string;
  size: number;
  sha256: string;
  createdAt: number;
}

/** A row as SQLite holds it: the JSON fields as text. */
type StoredTestResult = Omit<TestResultRow, 'git' | 'tags' | 'environment' | 'stats'> & {
  git: string | null;
  tags: string;
  environment: string | null;
  stats: string | null;
};

const COLUMNS = `id, organization_id AS organizationId, session_id AS sessionId, created_by AS createdBy, name,
  user_agent AS userAgent, status, reason, git, tags, environment, stats, started_at AS startedAt, finished_at AS finishedAt,
  created_at AS createdAt, updated_at AS updatedAt, files_removed_at AS filesRemovedAt`;
const ASSET_COLUMNS = `id, test_result_id AS testResultId, name, content_type AS contentType, size, sha256, created_at AS createdAt`;

const json = (value: unknown) => (value === null ? null : JSON.stringify(value));
const parsed = (row: StoredTestResult): TestResultRow => ({
  ...row,
  git: row.git === null ? null : (JSON.parse(row.git) as JsonObject),
  tags: JSON.parse(row.tags) as string[],
  environment: row.environment === null ? null : (JSON.parse(row.environment) as JsonObject | string),
  stats: row.stats === null ? null : (JSON.parse(row.stats) as JsonObject),
});

/** The row's fields as named parameters, the JSON ones as text. */
const params = (f: TestResultFields) => ({
  name: f.name,
  userAgent: f.userAgent,
  status: f.status,
  reason: f.reason,
  git: json(f.git),
  tags: JSON.stringify(f.tags),
  environment: json(f.environment),
  stats: json(f.stats),
  sessionId: f.sessionId,
  startedAt: f.startedAt,
  finishedAt: f.finishedAt,
});

interface PageParams {
  organizationId: string;
  before: number;
  status: string | null;
  sessionId: string | null;
  tag: string | null;
  limit: number;
}

export function testResultStore(db: Db) {
  const byId = db.prepare<[string, string], StoredTestResult>(`SELECT ${COLUMNS} FROM test_results WHERE id = ? AND organization_id = ?`);
  const newest = db.prepare<[string], { createdAt: number }>(
    'SELECT created_at AS createdAt FROM test_results WHERE organization_id = ? ORDER BY created_at DESC LIMIT 1',
  );
  const insert = db.prepare(
    `INSERT INTO test_results (id, organization_id, session_id, created_by, name, user_agent, status, reason, git, tags, environment,
       stats, started_at, finished_at, created_at, updated_at)
     VALUES (@id, @organizationId, @sessionId, @createdBy, @name, @userAgent, @status, @reason, @git, @tags, @environment,
       @stats, @startedAt, @finishedAt, @createdAt, @createdAt)`,
  );
  const update = db.prepare(
    `UPDATE test_results SET session_id = @sessionId, name = @name, user_agent = @userAgent, status = @status, reason = @reason, git = @git,
       tags = @tags, environment = @environment, stats = @stats, started_at = @startedAt, finished_at = @finishedAt,
       updated_at = @updatedAt
     WHERE id = @id AND organization_id = @organizationId`,
  );
  // Keyset paging newest first, on the (organization_id, created_at) unique index, or on the session's index when
  // the page is one session's: no OFFSET, no COUNT.
  const page = db.prepare<[PageParams], StoredTestResult>(
    `SELECT ${COLUMNS} FROM test_results
     WHERE organization_id = @organizationId AND created_at < @before AND (@status IS NULL OR status = @status)
       AND (@tag IS NULL OR EXISTS (SELECT 1 FROM json_each(tags) WHERE value = @tag))
     ORDER BY created_at DESC LIMIT @limit`,
  );
  const pageOfSession = db.prepare<[PageParams], StoredTestResult>(
    `SELECT ${COLUMNS} FROM test_results
     WHERE session_id = @sessionId AND organization_id = @organizationId AND created_at < @before
       AND (@status IS NULL OR status = @status) AND (@tag IS NULL OR EXISTS (SELECT 1 FROM json_each(tags) WHERE value = @tag))
     ORDER BY created_at DESC LIMIT @limit`,
  );
  const create = db.transaction(
    (id: string, organizationId: string, createdBy: string | null, fields: TestResultFields, now: number): TestResultRow => {
      const createdAt = uniqueCreatedAt(now, newest.get(organizationId)?.createdAt);
      insert.run({ id, organizationId, createdBy, createdAt, ...params(fields) });
      return { id, organizationId, createdBy, createdAt, updatedAt: createdAt, filesRemovedAt: null, ...fields };
    },
  );

  const insertAsset = db.prepare(
    `INSERT INTO test_result_assets (id, test_result_id, name, content_type, size, sha256, created_at)
     VALUES (@id, @testResultId, @name, @contentType, @size, @sha256, @createdAt)`,
  );
  const assetsOf = db.prepare<[string], AssetRow>(
    `SELECT ${ASSET_COLUMNS} FROM test_result_assets WHERE test_result_id = ? ORDER BY created_at, rowid`,
  );
  const assetById = db.prepare<[string, string], AssetRow>(
    `SELECT ${ASSET_COLUMNS} FROM test_result_assets WHERE id = ? AND test_result_id = ?`,
  );
  const markFilesRemoved = db.prepare<[number, number]>(
    'UPDATE test_results SET files_removed_at = ? WHERE id IN (SELECT DISTINCT test_result_id FROM test_result_assets WHERE created_at < ?)',
  );
  const deleteAssetsBefore = db.prepare<[number]>('DELETE FROM test_result_assets WHERE created_at < ?');
  // Content stored once however many results share it (the blob store keeps one copy per SHA-256).
  const storedBytes = db.prepare<[], { bytes: number }>(
    'SELECT COALESCE(SUM(size), 0) AS bytes FROM (SELECT MAX(size) AS size FROM test_result_assets GROUP BY sha256)',
  );
  const removeFilesBefore = db.transaction((cutoff: number, now: number) => {
    const results = markFilesRemoved.run(now, cutoff).changes;
    return { results, assets: deleteAssetsBefore.run(cutoff).changes };
  });

  return {
    /** The test result if it belongs to the organization. */
    get: (id: string, organizationId: string): TestResultRow | undefined => {
      const row = byId.get(id, organizationId);
      return row && parsed(row);
    },
    create: (id: string, organizationId: string, createdBy: string | null, fields: TestResultFields, now: number) =>
      create.immediate(id, organizationId, createdBy, fields, now),
    /** Writes every reporter field of the row, and its updatedAt. */
    update: (row: TestResultRow) => {
      update.run({ id: row.id, organizationId: row.organizationId, updatedAt: row.updatedAt, ...params(row) });
    },
    /** Newest first, created strictly before `before`; status, sessionId and a tag filter when given. */
    page: (query: PageParams): TestResultRow[] => (query.sessionId ? pageOfSession : page).all(query).map(parsed),

    addAsset: (asset: AssetRow) => {
      insertAsset.run(asset);
    },
    /** The test result's assets in upload order. */
    assets: (testResultId: string) => assetsOf.all(testResultId),
    asset: (id: string, testResultId: string) => assetById.get(id, testResultId),
    /**
     * Deletes every asset stored before `cutoff`, of every organization's results, and marks their results as having
     * lost their files at `now`. The bytes go with the blob sweep, unless something else refers to them.
     */
    removeFilesBefore: (cutoff: number, now: number): { results: number; assets: number } => removeFilesBefore.immediate(cutoff, now),
    /** What the test results' files take on disk, each content counted once. */
    storedBytes: (): number => storedBytes.get()!.bytes,
  };
}
