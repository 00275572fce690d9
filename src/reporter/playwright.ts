import type { FullConfig, FullResult, Reporter, Suite, TestCase, TestResult } from '@playwright/test/reporter';
import { execFileSync } from 'node:child_process';
import { openAsBlob } from 'node:fs';
import { basename, extname } from 'node:path';

/**
 * A Playwright reporter that files each run with a Benchtop lab as a test result, with the run's screenshots and
 * traces as its assets, and prints the result's URL. In playwright.config:
 *
 *   reporter: [['list'], ['<path to benchtop>/src/reporter/playwright.ts', { name: 'e2e' }]]
 *
 * Configured by BENCHTOP_URL (the lab, e.g. http://127.0.0.1:7676) and BENCHTOP_API_KEY (mob_...). Reporting is a
 * side job: whatever goes wrong with it is a warning, and never changes how the run itself ended.
 */

export interface BenchtopReporterOptions {
  /** What ran; defaults to BENCHTOP_RUN_NAME, else the name of the directory Playwright runs in. */
  name?: string;
  /** Tags for the result, e.g. ['nightly']. */
  tags?: string[];
  /**
   * The CI build the run belongs to, tagged build:<build> so that the lab lists a build's runs together; defaults to
   * BENCHTOP_BUILD, else the CI's own run (GitHub Actions, GitLab, Buildkite, CircleCI, Azure Pipelines, Jenkins).
   */
  build?: string;
  /** Overrides BENCHTOP_URL and BENCHTOP_API_KEY. */
  url?: string;
  apiKey?: string;
}

const USER_AGENT = 'benchtop-playwright-reporter/0.1.0';
/** Attachments worth keeping with the result: screenshots and traces (by name, or by their content type). */
const UPLOADED = (a: TestResult['attachments'][number]) =>
  a.path !== undefined && (a.name === 'screenshot' || a.name === 'trace' || a.contentType.startsWith('image/') || a.contentType === 'application/zip');

const STATUS: Record<FullResult['status'], string> = {
  passed: 'passed',
  failed: 'failed',
  timedout: 'failed',
  interrupted: 'interrupted',
};

function git(args: string[]): string | null {
  try {
    return execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 5000 }).trim() || null;
  } catch {
    return null;
  }
}

/** The CI build a run belongs to, by the variable each CI sets for a whole pipeline run; an empty one counts as unset. */
function buildOf(env: NodeJS.ProcessEnv): string | undefined {
  return env.BENCHTOP_BUILD || env.GITHUB_RUN_ID || env.CI_PIPELINE_ID || env.BUILDKITE_BUILD_NUMBER || env.CIRCLE_WORKFLOW_ID || env.BUILD_BUILDID || env.BUILD_NUMBER || undefined;
}

/**
 * CI's own variables first (a CI checkout is often a detached HEAD), then the repository Playwright runs in. An
 * empty variable counts as unset.
 */
function gitInfo(env: NodeJS.ProcessEnv) {
  const commitSha = env.GITHUB_SHA || env.CI_COMMIT_SHA || git(['rev-parse', 'HEAD']);
  if (!commitSha) return null;
  return {
    commitSha,
    commitMessage: env.CI_COMMIT_MESSAGE || git(['log', '-1', '--format=%B']),
    authorName: env.CI_COMMIT_AUTHOR || git(['log', '-1', '--format=%an']),
    branch: env.GITHUB_HEAD_REF || env.GITHUB_REF_NAME || env.CI_COMMIT_REF_NAME || git(['rev-parse', '--abbrev-ref', 'HEAD']),
  };
}

export class BenchtopReporter implements Reporter {
  private root: Suite | undefined;
  private readonly attachments: Array<{ name: string; path: string; contentType: string }> = [];

  constructor(private readonly options: BenchtopReporterOptions = {}) {}

  printsToStdio(): boolean {
    return false;
  }

  onBegin(_config: FullConfig, suite: Suite): void {
    this.root = suite;
  }

  onTestEnd(test: TestCase, result: TestResult): void {
    const title = test.titlePath().filter(Boolean).join(' › ');
    for (const a of result.attachments) {
      if (!UPLOADED(a)) continue;
      const retry = result.retry > 0 ? ` (retry ${result.retry})` : '';
      this.attachments.push({ name: `${title}${retry} - ${a.name}${extname(a.path!)}`, path: a.path!, contentType: a.contentType });
    }
  }

  async onEnd(result: FullResult): Promise<void> {
    const base = (this.options.url || process.env.BENCHTOP_URL)?.replace(/\/+$/, '').replace(/\/api\/v1$/, '');
    const apiKey = this.options.apiKey || process.env.BENCHTOP_API_KEY;
    if (!base || !apiKey) {
      warn('set BENCHTOP_URL and BENCHTOP_API_KEY to report this run to a Benchtop lab; not reported.');
      return;
    }
    try {
      const build = this.options.build || buildOf(process.env);
      const id = await this.report(`${base}/api/v1`, apiKey, result, build);
      console.log(`[benchtop] Test result: ${base}/api/v1/test-results/${id}`);
      if (build) console.log(`[benchtop] The build's runs: ${base}/test-results?tag=${encodeURIComponent(`build:${build}`)}`);
    } catch (error) {
      warn(`the run was not reported: ${(error as Error).message}`);
    }
  }

  private async report(api: string, apiKey: string, result: FullResult, build: string | undefined): Promise<string> {
    const tags = this.options.tags ?? [];
    const outcomes = { expected: 0, unexpected: 0, flaky: 0, skipped: 0 };
    for (const test of this.root?.allTests() ?? []) outcomes[test.outcome()]++;
    const body = {
      name: this.options.name || process.env.BENCHTOP_RUN_NAME || basename(process.cwd()),
      userAgent: USER_AGENT,
      status: STATUS[result.status],
      git: gitInfo(process.env),
      tags: build && !tags.some((t) => t.startsWith('build:')) ? [...tags, `build:${build}`] : tags,
      environment: { ci: Boolean(process.env.CI), os: process.platform, node: process.version },
      stats: { ...outcomes, duration: result.duration, startTime: result.startTime.toISOString() },
      startedAt: result.startTime.toISOString(),
      finishedAt: new Date(result.startTime.getTime() + result.duration).toISOString(),
    };
    const headers = { authorization: `Bearer ${apiKey}` };
    const created = await fetch(`${api}/test-results`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (created.status !== 201) throw new Error(`the lab answered ${created.status}: ${await created.text()}`);
    const { id } = (await created.json()) as { id: string };
    // One failed upload loses that asset only; the result and the other assets stay.
    for (const a of this.attachments) {
      try {
        const form = new FormData();
        form.append('name', a.name);
        // Read from disk as the request is sent: a trace may be hundreds of MB.
        form.append('file', await openAsBlob(a.path, { type: a.contentType }), basename(a.path));
        const r = await fetch(`${api}/test-results/${id}/assets`, { method: 'POST', headers, body: form });
        if (r.status !== 201) throw new Error(`the lab answered ${r.status}: ${await r.text()}`);
      } catch (error) {
        warn(`${a.name} was not uploaded: ${(error as Error).message}`);
      }
    }
    return id;
  }
}

function warn(message: string): void {
  console.warn(`[benchtop] Warning: ${message}`);
}

// Playwright loads a reporter from its module's default export.
export default BenchtopReporter;
