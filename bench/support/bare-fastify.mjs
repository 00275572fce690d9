// The baseline: a bare Fastify 5 server with no auth, no schema, no database, and a session-shaped reply.
// Plain JavaScript run by `node` itself, so its startup time has no TypeScript loader in it.
import Fastify from 'fastify';

const app = Fastify({ logger: false });
const session = {
  organizationId: '0b6f6e9a-3f7e-4c1e-9d2a-6a1b7f0c2d11',
  createdBy: '5d9c2e41-8a7b-4f3c-b1e2-0c9d8e7f6a55',
  createdAt: '2025-01-01T00:00:00.000Z',
  devices: [],
  instances: [],
};

app.get('/api/v1/health', async () => ({ status: 'ok', version: 'bare' }));
app.get('/api/v1/sessions/:id', async (request) => ({ id: request.params.id, ...session }));

await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT ?? 0) });
console.log(`Bare Fastify is serving http://127.0.0.1:${app.server.address().port}/api/v1`);

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => app.close().then(() => process.exit(0)));
}
