import type { Asset, TestResult, TestResultStatus } from '../../../../shared/api/test-results.js';
import { iso, isoOrNull } from '../../domain/time.js';
import type { AssetRow, TestResultRow } from '../../store/test-results.js';

/** Test results and their assets as the API shows them. */

export const presentTestResult = (r: TestResultRow): TestResult => ({
  id: r.id,
  organizationId: r.organizationId,
  name: r.name,
  userAgent: r.userAgent,
  status: r.status as TestResultStatus,
  reason: r.reason,
  git: r.git,
  tags: r.tags,
  environment: r.environment,
  stats: r.stats,
  sessionId: r.sessionId,
  createdBy: r.createdBy,
  startedAt: isoOrNull(r.startedAt),
  finishedAt: isoOrNull(r.finishedAt),
  createdAt: iso(r.createdAt),
  updatedAt: iso(r.updatedAt),
  filesRemovedAt: isoOrNull(r.filesRemovedAt),
});

export const presentAsset = (a: AssetRow): Asset => ({
  id: a.id,
  name: a.name,
  contentType: a.contentType,
  size: a.size,
  sha256: a.sha256,
  createdAt: iso(a.createdAt),
});
