import type { TestResult } from './api/test-results.js';

/** A run's CI build, as WebDriver runs (benchtop:options.build, a cloud's build name) and reporters tag it. */
export const BUILD = 'build:';

/** The tag a run of that build carries. */
export const buildTag = (build: string): string => `${BUILD}${build}`;

/** The Test results page listing the runs carrying one tag: a build's (a link a CI log can print), or any other. */
export const tagPath = (tag: string): string => `/test-results?tag=${encodeURIComponent(tag)}`;

/** The run's build name, if it was tagged with one. */
export const buildOf = (r: Pick<TestResult, 'tags'>): string | undefined => r.tags.find((t) => t.startsWith(BUILD))?.slice(BUILD.length);
