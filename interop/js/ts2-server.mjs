// ts2-server.mjs serves the fixture tools with the TypeScript SDK v2
// (@modelcontextprotocol/server): 2026-07-28 with server/discover, and the
// SDK's stateless fallback for 2025-era clients. tools/list is paginated.
import http from 'node:http';
import { Server, createMcpHandler } from '@modelcontextprotocol/server';
import { callTool, listPage } from './tools.mjs';

function factory() {
  const server = new Server({ name: 'interop-ts2', version: '2.4.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler('tools/list', (request) => listPage(request.params?.cursor));
  server.setRequestHandler('tools/call', (request) => callTool(request.params.name, request.params.arguments));
  return server;
}

const handler = createMcpHandler(factory, { onerror: (err) => process.stderr.write(`ts2-server: ${err.message}\n`) });

async function toRequest(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    for (const v of [value].flat()) headers.append(name, v);
  }
  const body = chunks.length > 0 && req.method !== 'GET' && req.method !== 'HEAD' ? Buffer.concat(chunks) : undefined;
  return new Request(`http://${req.headers.host}${req.url}`, { method: req.method, headers, body });
}

const server = http.createServer(async (req, res) => {
  try {
    const response = await handler.fetch(await toRequest(req));
    res.writeHead(response.status, Object.fromEntries(response.headers));
    if (response.body) {
      for await (const chunk of response.body) res.write(chunk);
    }
    res.end();
  } catch (err) {
    process.stderr.write(`ts2-server: ${err.stack}\n`);
    if (!res.headersSent) res.writeHead(500);
    res.end();
  }
});
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1');
