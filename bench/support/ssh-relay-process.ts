/**
 * The least a WebSocket terminal can be, in its own process (node --import tsx): each connection gets a PTY shell
 * through the simulated Mac's jump, and bytes are relayed both ways with nothing else (no auth, no routing, no
 * sharing, no flow control). A baseline for the engine's terminal: what the extra process and WebSocket hop cost by
 * themselves. The Mac's login comes as JSON in BENCH_MAC; it prints its port and serves until SIGTERM, or until
 * its parent goes away.
 */
import type { ClientChannel } from 'ssh2';
import { WebSocketServer } from 'ws';
import type { MacHostSim } from '../../test/support/mac-host/index.js';
import { hostLogin, jumpToVm, sshConnect } from './mac-lab.js';
import { stopWithParent } from '../../test/support/child-lifetime.js';

const mac = JSON.parse(process.env.BENCH_MAC || '{}') as MacHostSim;
const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
wss.on('connection', (ws) => {
  void (async () => {
    const host = await sshConnect(hostLogin(mac));
    const vm = await jumpToVm(mac, host);
    const stream = await new Promise<ClientChannel>((resolve, reject) =>
      vm.shell({ term: 'xterm-256color', cols: 80, rows: 24 }, (error, ch) => (error ? reject(error) : resolve(ch))));
    stream.on('data', (data: Buffer) => ws.send(data));
    ws.on('message', (data: Buffer) => stream.write(data));
    ws.on('close', () => host.end());
    ws.send('ready');
  })();
});
wss.on('listening', () => console.log(`Relay listening on 127.0.0.1:${(wss.address() as { port: number }).port}`));

stopWithParent(() => process.exit(0));
