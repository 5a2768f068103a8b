// ts1-server.mjs serves the fixture tools with the TypeScript SDK v1
// (@modelcontextprotocol/sdk) in stateless mode: a fresh server and transport
// per request, no session id, 2025-11-25 at most. tools/list is paginated.
import http from 'node:http';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { callTool, listPage } from './tools.mjs';

function newServer() {
  const server = new Server({ name: 'interop-ts1', version: '1.32.2' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, (request) => listPage(request.params?.cursor));
  server.setRequestHandler(CallToolRequestSchema, (request) => callTool(request.params.name, request.params.arguments));
  return server;
}

const server = http.createServer(async (req, res) => {
  const mcp = newServer();
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  res.on('close', () => {
    transport.close();
    mcp.close();
  });
  try {
    await mcp.connect(transport);
    await transport.handleRequest(req, res);
  } catch (err) {
    process.stderr.write(`ts1-server: ${err.stack}\n`);
    if (!res.headersSent) res.writeHead(500);
    res.end();
  }
});
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1');
