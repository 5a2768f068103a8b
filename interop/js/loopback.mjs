// loopback.mjs is preloaded (node --import) into every Node process the
// interop suite starts. A server that names no host, or a wildcard one, is
// bound to 127.0.0.1 instead; a server that still ends up on a non-loopback
// address ends the process (exit 70). The conformance suite's mock servers
// and server-everything call listen(port) and would otherwise bind every
// interface.
//
// It wraps net.Server.prototype._listen2, the step that binds once the
// address is known, so listen(0) stays synchronous: the suite reads
// server.address() right after calling it.
import net from 'node:net';

const HOST = '127.0.0.1';
const WILDCARDS = new Set([undefined, null, '', '0.0.0.0', '::']);
const bind = net.Server.prototype._listen2;

if (typeof bind !== 'function') {
  process.stderr.write('loopback.mjs: net.Server.prototype._listen2 is missing; cannot pin servers to loopback\n');
  process.exit(70);
}

function isLoopback(address) {
  return address === '::1' || /^127\./.test(address) || /^::ffff:127\./.test(address);
}

net.Server.prototype._listen2 = function listen2(address, port, addressType, backlog, fd, flags) {
  if (fd === undefined || fd === null || fd < 0) {
    if (WILDCARDS.has(address)) {
      address = HOST;
      addressType = 4;
    }
  }
  this.prependOnceListener('listening', () => {
    const a = this.address();
    if (a && typeof a === 'object' && !isLoopback(a.address)) {
      process.stderr.write(`loopback.mjs: a server bound ${a.address}:${a.port}; only loopback is allowed\n`);
      process.exit(70);
    }
    if (a && typeof a === 'object' && process.env.MCPFN_INTEROP_ANNOUNCE === '1') {
      process.stderr.write(`loopback.mjs: listening ${a.address}:${a.port}\n`);
    }
  });
  return bind.call(this, address, port, addressType, backlog, fd, flags);
};
