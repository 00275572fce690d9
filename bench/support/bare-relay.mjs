// The floor under a live screen's relay: a Node process that reads one TCP socket and sends each chunk it reads as a
// WebSocket message (ws, as the engine sends), with nothing else: no adb, no feed, no database. A picture relayed by
// the engine costs at least this, whatever its codec: one wake, one read, one WebSocket message.
// Plain JavaScript run by `node` itself, as bare-fastify.mjs is.
import { createServer } from 'node:net';
import { WebSocketServer } from 'ws';

const viewers = new Set();
const sockets = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false });
sockets.on('connection', (viewer) => {
  viewers.add(viewer);
  viewer.on('close', () => viewers.delete(viewer));
});
const feed = createServer((socket) => {
  socket.on('data', (chunk) => {
    for (const viewer of viewers) viewer.send(chunk, { binary: true });
  });
});
await new Promise((resolve) => feed.listen(0, '127.0.0.1', resolve));
await new Promise((resolve) => (sockets.address() ? resolve() : sockets.once('listening', resolve)));
console.log(`Bare relay: feed ${feed.address().port}, viewers ${sockets.address().port}`);
