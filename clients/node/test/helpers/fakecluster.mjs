// A stand-in for a HotKV cluster, which HotKV does not have yet: each "node" is a real
// hotkv-server behind a small TCP proxy that answers CLUSTER SLOTS with a fixed topology (so
// node-redis's cluster client discovers a multi-node cluster) and forwards every other command
// to its own server unchanged. Routing can then be checked for real: a command the client sends
// for a key must land on the server whose node owns the key's slot.
//
// Limits, by design: there are no MOVED/ASK redirections (each node serves only what the
// topology gives it because the client routes there, not because the server checks), and no
// CROSSSLOT errors from the servers. The proxy handles one request at a time per connection,
// which is enough for tests.
import net from 'node:net';
import { startServer } from './server.mjs';

// Where one complete RESP2/RESP3 reply ends in buf (from pos), or -1 if it is incomplete.
function replyEnd(buf, pos) {
  if (pos >= buf.length) return -1;
  const lineEnd = buf.indexOf('\r\n', pos);
  if (lineEnd === -1) return -1;
  const type = String.fromCharCode(buf[pos]);
  const header = buf.toString('latin1', pos + 1, lineEnd);
  let next = lineEnd + 2;
  switch (type) {
    case '+': case '-': case ':': case ',': case '_': case '#': case '(':
      return next;
    case '$': case '!': case '=': {
      const n = Number(header);
      if (n < 0) return next;
      return buf.length >= next + n + 2 ? next + n + 2 : -1;
    }
    case '*': case '~': case '>': case '%': case '|': {
      let n = Number(header);
      if (n < 0) return next;
      if (type === '%' || type === '|') n *= 2;
      for (let i = 0; i < n; i++) {
        next = replyEnd(buf, next);
        if (next === -1) return -1;
      }
      // An attribute map precedes the reply it describes.
      return type === '|' ? replyEnd(buf, next) : next;
    }
    default:
      throw new Error(`fake cluster: unknown RESP type ${JSON.stringify(type)}`);
  }
}

// Parses one request (an array of bulk strings) from buf; returns { args, end } or null.
function parseRequest(buf, pos) {
  const end = replyEnd(buf, pos);
  if (end === -1) return null;
  const args = [];
  let p = buf.indexOf('\r\n', pos) + 2;
  while (p < end) {
    const le = buf.indexOf('\r\n', p);
    const n = Number(buf.toString('latin1', p + 1, le));
    args.push(buf.toString('utf8', le + 2, le + 2 + n));
    p = le + 2 + n + 2;
  }
  return { args, end };
}

const bulk = (s) => `$${Buffer.byteLength(s)}\r\n${s}\r\n`;

function slotsReply(nodes) {
  let out = `*${nodes.length}\r\n`;
  for (const n of nodes) {
    out += `*3\r\n:${n.from}\r\n:${n.to}\r\n*3\r\n${bulk('127.0.0.1')}:${n.port}\r\n${bulk(n.id)}`;
  }
  return out;
}

function proxy(upstreamPort, topology) {
  const sockets = new Set();
  const srv = net.createServer((client) => {
    sockets.add(client);
    const up = net.connect({ port: upstreamPort, host: '127.0.0.1' });
    sockets.add(up);
    let inBuf = Buffer.alloc(0);
    let upBuf = Buffer.alloc(0);
    let waiting = null; // resolves with one upstream reply
    const queue = [];
    let busy = false;
    const close = () => { client.destroy(); up.destroy(); };
    client.on('error', close);
    up.on('error', close);
    client.on('close', close);
    up.on('close', close);
    up.on('data', (d) => {
      upBuf = Buffer.concat([upBuf, d]);
      const end = replyEnd(upBuf, 0);
      if (end !== -1 && waiting) {
        const reply = upBuf.subarray(0, end);
        upBuf = upBuf.subarray(end);
        const w = waiting;
        waiting = null;
        w(reply);
      }
    });
    const pump = async () => {
      if (busy) return;
      busy = true;
      while (queue.length) {
        const { args, raw } = queue.shift();
        const name = args.map((a) => a.toUpperCase());
        if (name[0] === 'CLUSTER' && name[1] === 'SLOTS') {
          client.write(slotsReply(topology()));
          continue;
        }
        const reply = await new Promise((resolve) => { waiting = resolve; up.write(raw); });
        client.write(reply);
      }
      busy = false;
    };
    client.on('data', (d) => {
      inBuf = Buffer.concat([inBuf, d]);
      for (;;) {
        const r = parseRequest(inBuf, 0);
        if (!r) break;
        queue.push({ args: r.args, raw: inBuf.subarray(0, r.end) });
        inBuf = inBuf.subarray(r.end);
      }
      void pump();
    });
  });
  return new Promise((resolve) => {
    srv.listen(0, '127.0.0.1', () => resolve({
      port: srv.address().port,
      close: () => new Promise((r) => { for (const s of sockets) s.destroy(); srv.close(() => r()); }),
    }));
  });
}

/**
 * Starts two servers behind proxies: node A serves slots 0-8191, node B 8192-16383.
 * Resolves to { nodes: [{ port (proxy), server, from, to, id }], ownerOf(slot), stop() }.
 */
export async function startFakeCluster() {
  const servers = [await startServer(), await startServer()];
  const nodes = [];
  const topology = () => nodes.map((n) => ({ from: n.from, to: n.to, port: n.port, id: n.id }));
  const ranges = [[0, 8191], [8192, 16383]];
  for (const [i, s] of servers.entries()) {
    const p = await proxy(s.port, topology);
    nodes.push({ port: p.port, proxy: p, server: s, from: ranges[i][0], to: ranges[i][1], id: `node${i}`.padEnd(40, '0') });
  }
  return {
    nodes,
    ownerOf: (slot) => nodes.find((n) => slot >= n.from && slot <= n.to),
    async stop() {
      for (const n of nodes) await n.proxy.close();
      for (const s of servers) await s.stop();
    },
  };
}
