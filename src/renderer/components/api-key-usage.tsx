import { useState } from 'react';
import { api, useAuth } from '../app-context.js';
import { useLoad } from '../ui.js';

/** LAN sharing's self-signed certificate, public (a TLS handshake with the LAN port shows it anyway). */
export const CERTIFICATE_PATH = '/api/v1/lab/certificate.pem';
export const CERTIFICATE_FILE = 'benchtop-lan-certificate.pem';

/** The SHA-256 of a PEM certificate's DER bytes, as `AA:BB:…`: what the lab settings and `openssl x509 -fingerprint -sha256` show. */
async function fingerprint(pem: string): Promise<string> {
  const der = Uint8Array.from(atob(pem.replace(/-----[^-]+-----|\s/g, '')), (c) => c.charCodeAt(0));
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', der));
  return [...digest].map((b) => b.toString(16).padStart(2, '0').toUpperCase()).join(':');
}

const isLoopback = (hostname: string) => hostname === 'localhost' || hostname === '[::1]' || /^127\./.test(hostname);

/**
 * The addresses a key may be used at: the one this page came by, and, for the lab owner on this machine while LAN
 * sharing is on, LAN sharing's (first: a key is mostly for another machine, a CI runner or a teammate's laptop).
 */
function useAddresses(): string[] {
  const labOwner = useAuth((s) => s.user?.labOwner ?? false);
  const here = window.location.origin;
  const lan = useLoad(async () => (labOwner && isLoopback(window.location.hostname) ? (await api.labSettings()).lanSharing.urls : []), [labOwner]);
  return [...(lan.data ?? []), here];
}

const TRUST: Array<{ title: string; code: string }> = [
  { title: 'curl', code: `curl --cacert ${CERTIFICATE_FILE} -H "Authorization: Bearer $KEY" $BENCHTOP/sessions` },
  { title: 'Node (WebdriverIO, the Playwright reporter, MCP clients)', code: `export NODE_EXTRA_CA_CERTS=$PWD/${CERTIFICATE_FILE}` },
  { title: 'Python (requests, Appium\'s Python client)', code: `export REQUESTS_CA_BUNDLE=$PWD/${CERTIFICATE_FILE}` },
  { title: 'Go (mobilecli)', code: `export SSL_CERT_FILE=$PWD/${CERTIFICATE_FILE}` },
];

/**
 * LAN sharing's certificate, for snippets at an https address: its download, its fingerprint, and how each client is
 * told to trust it. Read only then: on loopback's plain HTTP there is nothing to trust, and a lab that never shared
 * on the LAN has no certificate (404).
 */
function LanCertificate() {
  const sha256 = useLoad(async () => {
    const response = await fetch(CERTIFICATE_PATH);
    if (!response.ok) throw new Error(`The LAN certificate could not be read (${response.status}).`);
    return fingerprint(await response.text());
  }, []);
  return (
    <section className="key-certificate" aria-label="The lab's certificate">
      <h3>The lab&apos;s certificate</h3>
      <p>
        LAN sharing&apos;s certificate is the lab&apos;s own (self-signed): each client is told to trust it.{' '}
        <a href={CERTIFICATE_PATH} download={CERTIFICATE_FILE}>Download {CERTIFICATE_FILE}</a>
        {sha256.data && <>, SHA-256 <code className="wrap">{sha256.data}</code> (check that it is the one in Settings or on the lab&apos;s screen)</>}.
      </p>
      {sha256.error && <p className="error">{sha256.error}</p>}
      {TRUST.map((s) => <Snippet key={s.title} {...s} />)}
    </section>
  );
}

function Snippet({ title, code }: { title: string; code: string }) {
  return (
    <div>
      <h3>{title}</h3>
      <pre aria-label={`${title}: how to use the key`} tabIndex={0}><code>{code}</code></pre>
    </div>
  );
}

/**
 * How to use a new API key, beside it while it is shown: the variables each client reads, at the address the reader
 * came by (a teammate's browser on the LAN sees the LAN address), and over HTTPS the certificate each client is to trust.
 */
export function ApiKeyUsage({ apiKey }: { apiKey: string }) {
  const addresses = useAddresses();
  const [chosen, setChosen] = useState<string>();
  const origin = chosen && addresses.includes(chosen) ? chosen : addresses[0]!;
  const url = new URL(origin);
  const https = url.protocol === 'https:';
  const ws = origin.replace(/^http/, 'ws');
  const port = url.port || (https ? '443' : '80');
  const snippets: Array<{ title: string; code: string }> = [
    { title: 'CI and scripts (curl, the API)', code: `export BENCHTOP=${origin}/api/v1\nexport KEY=${apiKey}` },
    { title: 'Playwright reporter', code: `export BENCHTOP_URL=${origin}\nexport BENCHTOP_API_KEY=${apiKey}` },
    { title: 'mobilecli', code: `export MOBILECLI_FLEET_URL=${ws}/ws\nexport MOBILECLI_TOKEN=${apiKey}\nexport MOBILECLI_REMOTE_ONLY=1` },
    { title: 'MCP (Claude Code)', code: `claude mcp add --transport http benchtop ${origin}/mcp --header "Authorization: Bearer ${apiKey}"` },
    { title: 'WebDriver (Appium clients)', code: `${url.protocol}//any:${apiKey}@${url.host}/wd/hub` },
    {
      title: 'WebdriverIO (wdio.conf.js)',
      code: `protocol: '${url.protocol.slice(0, -1)}', hostname: '${url.hostname}', port: ${port}, path: '/wd/hub',\nuser: 'any', key: '${apiKey}',`,
    },
  ];
  return (
    <details className="key-usage" open>
      <summary>Use it</summary>
      {addresses.length > 1 && (
        <label className="key-address">
          Address in the snippets
          <select value={origin} onChange={(e) => setChosen(e.target.value)}>
            {addresses.map((a) => <option key={a} value={a}>{a}{isLoopback(new URL(a).hostname) ? ' (this machine only)' : ' (LAN sharing)'}</option>)}
          </select>
        </label>
      )}
      {snippets.map((s) => <Snippet key={s.title} {...s} />)}
      {https && <LanCertificate />}
    </details>
  );
}
