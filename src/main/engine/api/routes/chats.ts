import type { FastifyReply } from 'fastify';
import { Type } from 'typebox';
import { List, Uuid } from '../../../../shared/api/common.js';
import { Chat, CreateChatBody, ExecutionEventData, Message, MessageListQuery, PostMessageBody, PostMessageQuery, ToolCall } from '../../../../shared/api/chats.js';
import { invalid } from '../../domain/errors.js';
import { openSse } from '../../events/sse.js';
import type { Subscriber } from '../../events/event-log.js';
import type { Chats } from '../../services/chats.js';
import { BEARER, OrganizationHeader, responses, scopeOf, SOCKET_QUERY, type App } from '../http.js';
import { eventStream, served } from '../media.js';
import { list, page } from '../presenters/common.js';

const SessionParams = Type.Object({ sessionId: Uuid });
const ChatParams = Type.Object({ sessionId: Uuid, chatId: Uuid });
const MessageParams = Type.Object({ sessionId: Uuid, chatId: Uuid, messageId: Uuid });
const ToolCallParams = Type.Object({ sessionId: Uuid, chatId: Uuid, messageId: Uuid, toolCallId: Uuid });
/** A browser's EventSource and <img> cannot send Authorization: the bearer may come as ?token= instead. */
const BrowserQuery = Type.Object(SOCKET_QUERY);
/** Served as text/event-stream, and documented so: the whole stream is the sequence of its events. */
const EventStream = eventStream(
  'Server-Sent Events: frames of id: <seq>, event: <kind>, data: <json>, one per item below, in order; a comment heartbeat every 15 s.',
  ExecutionEventData,
  { type: 'string', pattern: '^[0-9]+$', description: 'The event\'s sequence number in its execution: send it back as Last-Event-ID to resume after it.' },
);
const Png = served(['image/png'], 'The PNG the tool call took.');

const EVENTS_DESCRIPTION =
  'Server-Sent Events of the message\'s execution, in this order: execution.started {executionId, messageId}, ' +
  'assistant.message.started {messageId}, assistant.message.delta {messageId, text}*, tool_call.created {toolCall} and ' +
  'tool_call.completed {toolCall} pairs, assistant.message.completed {message}, then execution.completed {executionId, status} ' +
  'or execution.failed {executionId, error: {code, message}}. A running execution replays from the start (or after ' +
  'Last-Event-ID), then continues live; a finished one replays its final state: the text as a single delta, no tool_call events.';

/** Turns the reply into an event stream the subscriber writes to, and detaches it when the client goes away. */
function stream(reply: FastifyReply, follow: (subscriber: Subscriber) => () => void): void {
  reply.hijack();
  const sse = openSse(reply.raw, 200);
  const detach = follow(sse);
  void sse.closed.then(detach);
}

export function chatRoutes(app: App, chats: Chats): void {
  const tags = ['Chats'];

  app.get('/sessions/:sessionId/chats', {
    schema: { tags, operationId: 'listChats', summary: 'The session\'s chats, oldest first', security: BEARER, headers: OrganizationHeader, params: SessionParams, response: responses({ 200: List(Chat) }, [401, 403, 404]) },
  }, (req) => list(chats.listChats(scopeOf(req), req.params.sessionId)));

  app.post('/sessions/:sessionId/chats', {
    schema: { tags, operationId: 'createChat', summary: 'Create a chat; metadata.deviceId binds a device of the session by serial', description: 'The body is optional.', security: BEARER, headers: OrganizationHeader, params: SessionParams, body: CreateChatBody, response: responses({ 201: Chat }, [400, 401, 403, 404]) },
    // The spec makes the body optional: no body is an empty one.
    // A JSON null is a body, and not an object: only a missing one is taken as empty.
    preValidation: async (req) => {
      if (req.body === undefined) req.body = {};
    },
  }, (req, reply) => reply.code(201).send(chats.createChat(scopeOf(req), req.params.sessionId, req.body)));

  app.get('/sessions/:sessionId/chats/:chatId', {
    schema: { tags, operationId: 'getChat', summary: 'A chat', security: BEARER, headers: OrganizationHeader, params: ChatParams, response: responses({ 200: Chat }, [401, 404]) },
  }, (req) => chats.getChat(scopeOf(req), req.params.sessionId, req.params.chatId));

  app.get('/sessions/:sessionId/chats/:chatId/messages', {
    schema: { tags, operationId: 'listMessages', summary: 'The most recent page of messages, oldest first; nextCursor pages back', security: BEARER, headers: OrganizationHeader, params: ChatParams, querystring: MessageListQuery, response: responses({ 200: List(Message) }, [400, 401, 404]) },
  }, (req) => {
    const { limit = 100, before } = req.query;
    const result = chats.listMessages(scopeOf(req), req.params.sessionId, req.params.chatId, { limit, before: before ? Date.parse(before) : undefined });
    return page(result.messages, result.nextCursor);
  });

  app.post('/sessions/:sessionId/chats/:chatId/messages', {
    schema: {
      tags,
      operationId: 'postMessage',
      summary: 'Post a user message and run the assistant',
      description: 'Options in the body or the query. Default: 202 with the running assistant message; mode=sync: 201 once it has finished; ' +
        'stream=true: 200 text/event-stream of its events; execute=false: 201 with the stored user message, nothing runs.',
      security: BEARER,
      headers: OrganizationHeader,
      params: ChatParams,
      querystring: PostMessageQuery,
      body: PostMessageBody,
      response: responses({ 200: EventStream, 201: Message, 202: Message }, [400, 401, 403, 404]),
    },
  }, async (req, reply) => {
    const { body, query } = req;
    const mode = body.mode ?? query.mode ?? 'async';
    const wantsStream = body.stream ?? query.stream ?? false;
    const execute = body.execute ?? query.execute ?? true;
    if (execute && wantsStream && mode === 'sync') {
      throw invalid('conflicting_options', 'Choose mode=sync (one JSON answer) or stream=true (an event stream), not both.');
    }
    const posted = await chats.postMessage(scopeOf(req), req.params.sessionId, req.params.chatId, body.text, execute);
    if (posted.kind === 'stored') return reply.code(201).send(posted.message);
    if (wantsStream) return stream(reply, (sse) => chats.follow(posted.message, sse));
    if (mode === 'sync') await posted.done;
    return reply.code(mode === 'sync' ? 201 : 202).send(chats.currentMessage(posted.chat, posted.message.id));
  });

  app.get('/sessions/:sessionId/chats/:chatId/messages/:messageId', {
    schema: { tags, operationId: 'getMessage', summary: 'A message with its tool calls', security: BEARER, headers: OrganizationHeader, params: MessageParams, response: responses({ 200: Message }, [401, 404]) },
  }, (req) => chats.getMessage(scopeOf(req), req.params.sessionId, req.params.chatId, req.params.messageId));

  app.get('/sessions/:sessionId/chats/:chatId/messages/:messageId/events', {
    config: { tokenInQuery: true },
    schema: { tags, operationId: 'messageEvents', summary: 'The execution\'s events (SSE)', description: EVENTS_DESCRIPTION, security: BEARER, headers: OrganizationHeader, querystring: BrowserQuery, params: MessageParams, response: responses({ 200: EventStream }, [401, 404]) },
  }, (req, reply) => {
    const { chat, message } = chats.executionOf(scopeOf(req, req.query.org), req.params.sessionId, req.params.chatId, req.params.messageId);
    // EventSource sends the last id it saw when it reconnects: a running execution resumes after it.
    const lastId = Number(req.headers['last-event-id']);
    stream(reply, (sse) => chats.watch(chat, message, sse, Number.isInteger(lastId) && lastId > 0 ? lastId : 0));
  });

  app.get('/sessions/:sessionId/chats/:chatId/messages/:messageId/tool-calls', {
    schema: { tags, operationId: 'listToolCalls', summary: 'The tool calls of a message', security: BEARER, headers: OrganizationHeader, params: MessageParams, response: responses({ 200: List(ToolCall) }, [401, 404]) },
  }, (req) => list(chats.listToolCalls(scopeOf(req), req.params.sessionId, req.params.chatId, req.params.messageId)));

  app.get('/sessions/:sessionId/chats/:chatId/messages/:messageId/tool-calls/:toolCallId/image', {
    config: { tokenInQuery: true },
    schema: { tags: ['Extensions'], operationId: 'toolCallImage', summary: 'The PNG a screenshot tool call took', security: BEARER, headers: OrganizationHeader, querystring: BrowserQuery, params: ToolCallParams, response: responses({ 200: Png }, [401, 404]) },
  }, async (req, reply) => {
    const image = await chats.openToolCallImage(scopeOf(req, req.query.org), req.params.sessionId, req.params.chatId, req.params.messageId, req.params.toolCallId);
    return reply.type(image.contentType).header('cache-control', 'private, max-age=31536000, immutable').send(image.content.createReadStream());
  });

  app.post('/sessions/:sessionId/chats/:chatId/messages/:messageId/cancel', {
    schema: { tags, operationId: 'cancelMessage', summary: 'Cancel a running message; it stops within a second', security: BEARER, headers: OrganizationHeader, params: MessageParams, response: responses({ 200: Message }, [401, 403, 404]) },
  }, (req) => chats.cancelMessage(scopeOf(req), req.params.sessionId, req.params.chatId, req.params.messageId));
}
