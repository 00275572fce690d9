import { randomUUID } from 'node:crypto';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { Scope } from '../../services/scope.js';
import type { McpLab } from './lab.js';
import { explain, failure, TOOLS, TOOLS_BY_NAME, type McpSessionState } from './tools.js';

// The parts of the MCP SDK that /mcp uses, in a module of their own that route.ts imports when the first session opens.
export { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';

const INSTRUCTIONS =
  'Benchtop is a device lab: real phones (and Mac build machines) shared by a team. Take a phone with ' +
  'mobile_allocate_remote_device (mobile_list_remote_devices shows which exist and are free), drive it with the other ' +
  'mobile_* tools, passing its serial as device, and give it back with mobile_release_remote_device when the task is done. ' +
  'mobile_list_available_devices lists the phones your organization holds now.';

/** The scope of the request a tool call arrived in: each POST picks its organization, as a REST call does. */
export interface ScopeAuth extends AuthInfo {
  extra: { scope: Scope };
}

/** One MCP session's server: the lab's tools, answering in the scope of the request each call arrived in. */
function mcpServer(lab: McpLab, version: string, log: (error: unknown) => void): Server {
  const server = new Server({ name: 'benchtop', title: 'Benchtop device lab', version }, { capabilities: { tools: {} }, instructions: INSTRUCTIONS });
  const state: McpSessionState = { labSessions: new Map(), refs: new Map() };
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: TOOLS.map((t) => ({ name: t.name, title: t.title, description: t.description, inputSchema: t.inputSchema as never, annotations: t.annotations })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const tool = TOOLS_BY_NAME.get(request.params.name);
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool ${request.params.name}; tools/list lists the tools of this server.`);
    const scope = (extra.authInfo as ScopeAuth | undefined)?.extra.scope;
    if (!scope) return failure(explain(new Error('no scope')));
    try {
      return await tool.call({ scope, lab, state, signal: extra.signal, log }, request.params.arguments ?? {});
    } catch (error) {
      log(error);
      return failure(explain(error));
    }
  });
  return server;
}

/** A new session's server and transport; the transport reports the session's id once initialize has been answered. */
export function openSession(
  lab: McpLab,
  version: string,
  log: (error: unknown) => void,
  on: { opened(id: string, session: { server: Server; transport: WebStandardStreamableHTTPServerTransport }): void; closed(id: string): void },
): { server: Server; transport: WebStandardStreamableHTTPServerTransport } {
  const server = mcpServer(lab, version, log);
  const transport: WebStandardStreamableHTTPServerTransport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: randomUUID,
    // Every request here is answered by one message (no tool sends progress or asks the client anything), and
    // the protocol lets such an answer be one application/json body instead of an SSE stream of one event:
    // that saves both sides a stream per call, a third of a tool call's overhead. Server-initiated messages
    // still stream, on the session's GET /mcp SSE stream.
    enableJsonResponse: true,
    onsessioninitialized: (id) => on.opened(id, { server, transport }),
    onsessionclosed: (id) => on.closed(id),
  });
  transport.onclose = () => {
    if (transport.sessionId) on.closed(transport.sessionId);
  };
  return { server, transport };
}
