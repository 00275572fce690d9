// The least a WebDriver proxy can be, as the appium benchmark's second baseline: Node's HTTP server in front of one
// Appium, undici with keep-alive behind it, each body read whole and passed on, nothing checked, logged or kept. What
// it adds to a command is the price of any hop between a client and Appium on this machine (two more processes' socket
// writes and wake-ups); what the lab adds beyond it is the lab's own.
import { createServer } from 'node:http';
import { Agent, request } from 'undici';

const target = `http://127.0.0.1:${Number(process.env.APPIUM_PORT)}`;
const agent = new Agent();
const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', async () => {
    const body = chunks.length > 0 ? Buffer.concat(chunks) : undefined;
    try {
      const reply = await request(`${target}${req.url}`, { method: req.method, dispatcher: agent, headers: body ? { 'content-type': 'application/json' } : {}, body });
      const answer = Buffer.from(await reply.body.arrayBuffer());
      res.writeHead(reply.statusCode, { 'content-type': String(reply.headers['content-type'] ?? 'application/json'), 'content-length': answer.length });
      res.end(answer);
    } catch (error) {
      res.writeHead(502).end(String(error));
    }
  });
});
server.listen(0, '127.0.0.1', () => console.log(`Bare proxy is serving http://127.0.0.1:${server.address().port}`));
for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => server.close(() => process.exit(0)));
