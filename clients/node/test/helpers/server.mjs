// Starts a real hotkv-server for a test file: on a free loopback port, persistence off, DEBUG
// enabled (the tests freeze its clock with DEBUG CLOCK SET), in a temporary directory. The
// binary is HOTKV_SERVER_BIN, or bin/hotkv-server at the repository root (test.sh builds it).
// The server is killed when the test file ends, also when a test fails or the process exits.
import { spawn } from 'node:child_process';
import { before, after } from 'node:test';
import { mkdtempSync, rmSync, existsSync, readFileSync, openSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const repoRoot = path.resolve(here, '../../../..');

export function serverBin() {
  const bin = process.env.HOTKV_SERVER_BIN || path.join(repoRoot, 'bin', 'hotkv-server');
  if (!existsSync(bin)) {
    throw new Error(`hotkv-server not found at ${bin}: run clients/node/test.sh or set HOTKV_SERVER_BIN`);
  }
  return bin;
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function canConnect(port) {
  return new Promise((resolve) => {
    const c = net.connect({ port, host: '127.0.0.1' });
    c.once('connect', () => { c.destroy(); resolve(true); });
    c.once('error', () => resolve(false));
  });
}

const running = new Set();
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/**
 * Starts one server for the calling test file (in before) and stops it (in after), the setup
 * most files share. The object returned reads the running server's url and port when asked, so a
 * file can keep it at module level and tests read server.url as before.
 */
export function useServer() {
  let server;
  before(async () => { server = await startServer(); });
  after(async () => { await server?.stop(); });
  return { get url() { return server.url; }, get port() { return server.port; } };
}

/** Starts a server; resolves to { port, url, stop() }. */
export async function startServer(extraArgs = []) {
  const bin = serverBin();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hotkv-node-test-'));
  let lastErr;
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePort();
    const logPath = path.join(dir, `server-${port}.log`);
    const log = openSync(logPath, 'w');
    const child = spawn(bin, [
      '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no',
      '--enable-debug-command', 'yes', '--dir', dir, ...extraArgs,
    ], { stdio: ['ignore', log, log] });
    running.add(child);
    let exited = false;
    child.once('exit', () => { exited = true; running.delete(child); });
    const deadline = Date.now() + 15000;
    while (Date.now() < deadline && !exited) {
      if (await canConnect(port)) {
        return {
          port,
          url: `hotkv://127.0.0.1:${port}`,
          async stop() {
            if (!exited) {
              const done = new Promise((r) => child.once('exit', r));
              child.kill('SIGKILL');
              await done;
            }
            rmSync(dir, { recursive: true, force: true });
          },
        };
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    child.kill('SIGKILL');
    lastErr = new Error(`hotkv-server did not start on port ${port}:\n${readFileSync(logPath, 'utf8')}`);
  }
  rmSync(dir, { recursive: true, force: true });
  throw lastErr;
}
