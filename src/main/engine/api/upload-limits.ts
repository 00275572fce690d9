import type { FastifyReply, FastifyRequest } from 'fastify';
import { invalid, ServiceError } from '../domain/errors.js';

/** The limits on uploads that stream to disk (a signed-URL PUT, a form's file part). */
export interface UploadLimitSettings {
  /** An upload that has sent nothing for this long is ended and its staged bytes removed. */
  idleMs: number;
  /** How many uploads one caller (an API key, a user, or the client address of a signed URL) may have in flight. */
  perCaller: number;
}

/** The body stopped arriving for longer than the idle limit. */
class UploadStalled extends Error {
  constructor() {
    super('The upload sent nothing for longer than the idle limit.');
    this.name = 'UploadStalled';
  }
}

/**
 * Ends stalled uploads and bounds how many one caller streams at once. Without it a client that declares a large
 * body, sends half of it and then nothing pins the connection and its staging file for ever (Fastify's
 * requestTimeout is 0 so that large uploads on slow links are not cut), and a key or signed-URL holder can pin
 * disk with as many such connections as it likes.
 */
export class UploadLimits {
  private readonly inFlight = new Map<string, number>();

  constructor(readonly settings: UploadLimitSettings) {}

  /**
   * Runs one upload's `work`, which reads the request body. The socket's own idle timer (activity in either
   * direction; an upload's server writes nothing until it answers) measures the silence. When it fires, the
   * request is made to fail as a broken-off body does, by an 'error' on it: every reader of the body (the
   * multipart parser, the signed URL's size cap) ends there and its staged file is removed, while the socket
   * stays open to carry the answer, upload_stalled, after which the connection is closed.
   */
  async run<T>(req: FastifyRequest, reply: FastifyReply, work: () => Promise<T>): Promise<T> {
    const who = callerOf(req);
    const count = this.inFlight.get(who) ?? 0;
    if (count >= this.settings.perCaller) {
      // Its body is never read: the connection closes after the answer rather than reading it to its end.
      reply.header('connection', 'close');
      throw new ServiceError('too_many', 'too_many_uploads', `At most ${this.settings.perCaller} uploads may be in flight at once for one caller; wait for one to finish.`);
    }
    this.inFlight.set(who, count + 1);
    const socket = req.raw.socket;
    let stalled = false;
    const onIdle = () => {
      // A body received in full is no stalled upload: the work after it (a commit, an app read) may take a while.
      if (req.raw.complete) return;
      stalled = true;
      req.raw.emit('error', new UploadStalled());
    };
    // Node's server destroys a socket whose timeout nobody listens to; a listener on the response keeps it open
    // (the one on the request is called only while its body is incomplete).
    reply.raw.on('timeout', onIdle);
    // Whatever else reads the body, its error event has a listener: an emit without one would throw.
    req.raw.on('error', ignore);
    socket.setTimeout(this.settings.idleMs);
    try {
      return await work();
    } catch (error) {
      if (!stalled) throw error;
      reply.header('connection', 'close');
      throw invalid('upload_stalled', `Nothing arrived for ${this.settings.idleMs / 1000} s, so the upload was ended and what had arrived was removed; send it again.`);
    } finally {
      socket.setTimeout(0);
      reply.raw.off('timeout', onIdle);
      req.raw.off('error', ignore);
      const left = (this.inFlight.get(who) ?? 1) - 1;
      if (left === 0) this.inFlight.delete(who);
      else this.inFlight.set(who, left);
    }
  }
}

const ignore = () => undefined;

function callerOf(req: FastifyRequest): string {
  const { caller } = req;
  if (!caller) return `address:${req.ip}`;
  return caller.key ? `key:${caller.key.id}` : `user:${caller.user.id}`;
}
