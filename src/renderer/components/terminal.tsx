import { FitAddon } from '@xterm/addon-fit';
import { Terminal } from '@xterm/xterm';
import '@xterm/xterm/css/xterm.css';
import { useEffect, useRef, useState } from 'react';
import { api } from '../app-context.js';

const CLOSE_REASONS: Record<number, string> = {
  1000: 'The shell exited.',
  4001: 'The instance was released.',
  1011: 'The connection to the instance was lost.',
  4008: 'This terminal fell behind and was disconnected.',
  1001: 'Benchtop is shutting down.',
};

/** A shell on a ready instance. */
export function InstanceTerminal({ sessionId, instanceId, name = 'main' }: { sessionId: string; instanceId: string; name?: string }) {
  return (
    <SocketTerminal
      key={`${sessionId}/${instanceId}/${name}`}
      label="Instance terminal"
      connect={(size) => api.terminalSocket(sessionId, instanceId, size, name)}
      closeReasons={CLOSE_REASONS}
    />
  );
}

/**
 * A terminal over a WebSocket: raw bytes both ways as binary messages, and the terminal's size sent as a resize
 * control message whenever the fit changes it. Mac instances and Android phones speak the same protocol.
 */
export function SocketTerminal({ label, connect, closeReasons }: {
  label: string;
  connect(size: { cols: number; rows: number }): { url: string; protocols: string[] };
  closeReasons: Record<number, string>;
}) {
  const host = useRef<HTMLDivElement>(null);
  const [closed, setClosed] = useState<string>();
  const open = useRef(connect);

  useEffect(() => {
    const term = new Terminal({ cursorBlink: true, fontSize: 13, fontFamily: 'ui-monospace, "DejaVu Sans Mono", monospace', convertEol: false });
    const fit = new FitAddon();
    term.loadAddon(fit);
    term.open(host.current!);
    fit.fit();
    const { url, protocols } = open.current({ cols: term.cols, rows: term.rows });
    const socket = new WebSocket(url, protocols);
    socket.binaryType = 'arraybuffer';
    const encoder = new TextEncoder();
    const sendSize = () => {
      if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ type: 'resize', cols: term.cols, rows: term.rows }));
    };
    // Keys typed while the socket connects are kept and sent once it is open, not dropped.
    const early: Uint8Array[] = [];
    socket.onopen = () => {
      sendSize();
      for (const bytes of early.splice(0)) socket.send(bytes);
      term.focus();
    };
    socket.onmessage = (event: MessageEvent<ArrayBuffer | string>) => {
      if (typeof event.data !== 'string') return term.write(new Uint8Array(event.data));
      const control = JSON.parse(event.data) as { type: string; message?: string };
      if (control.type === 'error') term.write(`\r\n\x1b[31m${control.message}\x1b[0m\r\n`);
    };
    socket.onclose = (event) => setClosed(closeReasons[event.code] ?? (event.code === 1006 ? 'The terminal could not connect.' : `The terminal closed (${event.code}).`));
    const input = term.onData((data) => {
      if (socket.readyState === WebSocket.OPEN) socket.send(encoder.encode(data));
      else if (socket.readyState === WebSocket.CONNECTING) early.push(encoder.encode(data));
    });
    const resized = term.onResize(sendSize);
    const observer = new ResizeObserver(() => fit.fit());
    observer.observe(host.current!);
    return () => {
      observer.disconnect();
      input.dispose();
      resized.dispose();
      socket.onclose = null;
      socket.close();
      term.dispose();
    };
    // Connects once per mount: a new target is a new key.
  }, []);

  return (
    <div className="terminal-wrap">
      <div ref={host} className="terminal" role="region" aria-label={label} />
      {closed && <p className="muted" role="status">{closed}</p>}
    </div>
  );
}
