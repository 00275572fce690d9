/**
 * How to use a new API key, beside it while it is shown: the variables each client reads, at the address this page
 * reached the lab by (a teammate's browser on the LAN sees the LAN address).
 */
export function ApiKeyUsage({ apiKey }: { apiKey: string }) {
  const origin = window.location.origin;
  const host = window.location.host;
  const ws = origin.replace(/^http/, 'ws');
  const snippets: Array<{ title: string; code: string }> = [
    { title: 'CI and scripts (curl, the API)', code: `export BENCHTOP=${origin}/api/v1\nexport KEY=${apiKey}` },
    { title: 'Playwright reporter', code: `export BENCHTOP_URL=${origin}\nexport BENCHTOP_API_KEY=${apiKey}` },
    { title: 'mobilecli', code: `export MOBILECLI_FLEET_URL=${ws}/ws\nexport MOBILECLI_TOKEN=${apiKey}\nexport MOBILECLI_REMOTE_ONLY=1` },
    { title: 'MCP (Claude Code)', code: `claude mcp add --transport http benchtop ${origin}/mcp --header "Authorization: Bearer ${apiKey}"` },
    { title: 'WebDriver (Appium clients)', code: `${window.location.protocol}//any:${apiKey}@${host}/wd/hub` },
  ];
  return (
    <details className="key-usage" open>
      <summary>Use it</summary>
      {snippets.map((s) => (
        <div key={s.title}>
          <h3>{s.title}</h3>
          <pre aria-label={`${s.title}: how to use the key`} tabIndex={0}><code>{s.code}</code></pre>
        </div>
      ))}
    </details>
  );
}
