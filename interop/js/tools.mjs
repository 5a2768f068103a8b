// tools.mjs is the fixture tool set both TypeScript SDK servers serve: seven
// tools over three tools/list pages (3, 3, 1) with opaque cursors.
export const PAGES = [
  ['echo', 'add', 'structured'],
  ['page2_a', 'page2_b', 'page2_c'],
  ['page3_a'],
];

const object = (properties, required = []) => ({ type: 'object', properties, required });

const schemas = {
  echo: object({ message: { type: 'string' } }, ['message']),
  add: object({ a: { type: 'number' }, b: { type: 'number' } }, ['a', 'b']),
  structured: object({ city: { type: 'string' } }, ['city']),
};

function tool(name) {
  return { name, description: `fixture tool ${name}`, inputSchema: schemas[name] ?? object({}) };
}

// listPage answers tools/list for a cursor: undefined starts at page one.
export function listPage(cursor) {
  const index = cursor === undefined ? 0 : Number(/^page-(\d+)$/.exec(cursor)?.[1]);
  if (!Number.isInteger(index) || index < 1 && cursor !== undefined || index >= PAGES.length) {
    throw new Error(`unknown cursor ${JSON.stringify(cursor)}`);
  }
  const result = { tools: PAGES[index].map(tool) };
  if (index + 1 < PAGES.length) result.nextCursor = `page-${index + 1}`;
  return result;
}

// callTool answers tools/call for the fixture tools.
export function callTool(name, args = {}) {
  switch (name) {
    case 'echo':
      return { content: [{ type: 'text', text: `echo: ${args.message}` }] };
    case 'add':
      return { content: [{ type: 'text', text: String(args.a + args.b) }] };
    case 'structured':
      return {
        content: [{ type: 'text', text: JSON.stringify({ city: args.city, celsius: 21.5 }) }],
        structuredContent: { city: args.city, celsius: 21.5 },
      };
    default:
      if (PAGES.flat().includes(name)) return { content: [{ type: 'text', text: name }] };
      return { content: [{ type: 'text', text: `unknown tool ${name}` }], isError: true };
  }
}
