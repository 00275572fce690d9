import type { FastifyRequest } from 'fastify';

/**
 * The origin the caller reached this server at: the scheme of its socket and the Host it sent (the host check has
 * vetted it), or the socket's own address for a client that sent no Host.
 */
export function readerOrigin(req: FastifyRequest): string {
  const local = req.socket.localAddress ?? '127.0.0.1';
  const host = req.headers.host ?? `${local.includes(':') ? `[${local}]` : local}:${req.socket.localPort}`;
  return `${req.protocol}://${host}`;
}
