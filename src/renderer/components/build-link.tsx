import type { ReactNode } from 'react';
import type { TestResult } from '../../shared/api/test-results.js';
import { buildOf, buildTag, tagPath } from '../../shared/test-result-tags.js';
import { linkTo } from '../router.js';

/** A run's CI build, a link to the page of every run of that build; `otherwise` for a run tagged with none. */
export function BuildLink({ result, otherwise = null }: { result: Pick<TestResult, 'tags'>; otherwise?: ReactNode }) {
  const build = buildOf(result);
  if (build === undefined) return <>{otherwise}</>;
  const path = tagPath(buildTag(build));
  return <a href={path} onClick={linkTo(path)} title="Every run of this build">{build}</a>;
}
