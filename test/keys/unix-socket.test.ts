import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, request, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  createClientAddress,
  isSluiceError,
  type ClientAddressFunction,
  type ClientAddressOptions,
  type ClientAddressResult,
} from '../../src/index.js';

/**
 * Sends one request with `headers` to a real server listening on `listen` (a Unix socket path or
 * a loopback TCP port) and returns what each resolver decides for the request the server got.
 */
async function viaServer(
  listen: { path: string } | { port: 0; host: '127.0.0.1' },
  headers: Record<string, string>,
  resolvers: ClientAddressFunction[],
  before: (req: IncomingMessage) => void = () => {},
): Promise<ClientAddressResult[]> {
  let results: ClientAddressResult[] = [];
  const server = createServer((req, res) => {
    before(req);
    results = resolvers.map((resolve) => resolve(req));
    res.end();
  });
  server.listen(listen);
  await once(server, 'listening');
  try {
    const address = server.address();
    const target =
      typeof address === 'string' ? { socketPath: address } : { host: '127.0.0.1', port: address?.port };
    const sent = request({ ...target, path: '/', headers, agent: false });
    sent.on('error', () => {}); // the destroyed-socket case resets the connection
    const reply = new Promise<void>((resolve) => {
      sent.on('response', (res) => res.resume().on('end', resolve));
      sent.on('close', resolve);
    });
    sent.end();
    await reply;
    return results;
  } finally {
    server.close();
    server.closeAllConnections();
    await once(server, 'close');
  }
}

const socketPath = () => join(tmpdir(), `sluice-keys-${process.pid}-${randomBytes(4).toString('hex')}.sock`);
const realIp: ClientAddressOptions = { header: 'x-real-ip', trustUnixSocket: true };

describe('clientAddress: a proxy on a Unix socket', () => {
  it('is not trusted by default: a Unix-socket peer has no address to trust', async () => {
    const [result] = await viaServer({ path: socketPath() }, { 'x-real-ip': '198.51.100.7' }, [
      createClientAddress({ header: 'x-real-ip' }),
    ]);
    assert.deepEqual(result, { address: undefined, source: 'untrusted-peer' });
  });

  it('trustUnixSocket: true reads the header of a Unix-socket peer', async () => {
    const results = await viaServer(
      { path: socketPath() },
      {
        'x-real-ip': '198.51.100.7',
        'x-forwarded-for': '6.6.6.6, 198.51.100.8',
        forwarded: 'for=198.51.100.9',
      },
      [
        createClientAddress(realIp),
        createClientAddress({ trustUnixSocket: true }),
        createClientAddress({ header: 'forwarded', trustUnixSocket: true }),
      ],
    );
    assert.deepEqual(results, [
      { address: '198.51.100.7', source: 'x-real-ip' },
      { address: '198.51.100.8', source: 'x-forwarded-for' },
      { address: '198.51.100.9', source: 'forwarded' },
    ]);
  });

  it('trustUnixSocket: without a header or with a bad one, there is no address to fall back to', async () => {
    const [none] = await viaServer({ path: socketPath() }, {}, [createClientAddress(realIp)]);
    assert.deepEqual(none, { address: undefined, source: 'socket' });
    const [bad] = await viaServer({ path: socketPath() }, { 'x-real-ip': 'garbage' }, [
      createClientAddress(realIp),
    ]);
    assert.deepEqual(bad, { address: undefined, source: 'malformed-header' });
  });

  it('trustUnixSocket: a TCP socket that lost its address is not taken for a Unix socket', async () => {
    const [result] = await viaServer(
      { port: 0, host: '127.0.0.1' },
      { 'x-real-ip': '198.51.100.7' },
      [createClientAddress({ ...realIp, trustedProxies: [] })],
      (req) => req.socket.destroy(), // remoteAddress was never read: it is gone now
    );
    assert.deepEqual(result, { address: undefined, source: 'untrusted-peer' });
    const lost = { socket: { remoteAddress: undefined, localAddress: '127.0.0.1' }, headers: {} };
    assert.equal(createClientAddress(realIp)(lost).source, 'untrusted-peer');
    for (const socket of [null, undefined, { remoteAddress: undefined, destroyed: true }])
      assert.equal(createClientAddress(realIp)({ socket, headers: {} }).source, 'untrusted-peer');
  });

  it('trustUnixSocket: in the { peer } forms, an absent peer is the Unix socket', () => {
    const resolve = createClientAddress(realIp);
    const headers = { 'x-real-ip': '198.51.100.7' };
    const expected = { address: '198.51.100.7', source: 'x-real-ip' };
    assert.deepEqual(resolve({ peer: undefined, headers }), expected);
    assert.deepEqual(resolve({ request: { headers }, peer: undefined }), expected);
    // Addresses are still judged by trustedProxies.
    assert.equal(resolve({ peer: '203.0.113.7', headers }).source, 'untrusted-peer');
  });

  it('trustUnixSocket must be a boolean', () => {
    assert.throws(
      () => createClientAddress({ trustUnixSocket: 'yes' } as unknown as ClientAddressOptions),
      (error: unknown) => isSluiceError(error, 'SLUICE_CONFIG') && /trustUnixSocket/.test(error.message),
    );
  });
});
