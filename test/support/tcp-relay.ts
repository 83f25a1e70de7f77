import { once } from 'node:events';
import { createServer, connect, type Server, type Socket } from 'node:net';

/**
 * A TCP relay between the service and PostgreSQL, for outage tests that must not touch the shared
 * server. It can freeze: stop passing bytes either way without closing anything, as a server stopped
 * with SIGSTOP (or a network that drops packets) looks to the service; thawing passes everything
 * held back. It can also be cut: every connection is reset and the port refuses new ones, as a
 * stopped server looks; `restore` listens again on the same port.
 */
export class TcpRelay {
  private server: Server;
  private readonly pairs = new Set<[Socket, Socket]>();
  private frozen = false;
  private port = 0;

  constructor(private readonly target: { host: string; port: number }) {
    this.server = this.makeServer();
  }

  private makeServer(): Server {
    return createServer((client) => {
      const upstream = connect(this.target.port, this.target.host);
      const pair: [Socket, Socket] = [client, upstream];
      this.pairs.add(pair);
      client.pipe(upstream);
      upstream.pipe(client);
      if (this.frozen) for (const socket of pair) socket.pause();
      const end = () => {
        this.pairs.delete(pair);
        client.destroy();
        upstream.destroy();
      };
      client.on('error', end).on('close', end);
      upstream.on('error', end).on('close', end);
    });
  }

  /** Listens on a free loopback port (or the port it had before a cut); returns the port. */
  async listen(): Promise<number> {
    this.server.listen(this.port, '127.0.0.1');
    await once(this.server, 'listening');
    this.port = (this.server.address() as { port: number }).port;
    return this.port;
  }

  /** A connection URL like `url` that goes through the relay. */
  async relayedUrl(url: string): Promise<string> {
    const relayed = new URL(url);
    relayed.host = `127.0.0.1:${await this.listen()}`;
    return relayed.toString();
  }

  freeze(): void {
    this.frozen = true;
    for (const pair of this.pairs) for (const socket of pair) socket.pause();
  }

  thaw(): void {
    this.frozen = false;
    for (const pair of this.pairs) for (const socket of pair) socket.resume();
  }

  /** Resets every connection and stops listening: connections are refused until `restore`. */
  async cut(): Promise<void> {
    const closed = new Promise((resolve) => this.server.close(resolve));
    for (const pair of this.pairs) for (const socket of pair) socket.resetAndDestroy();
    this.pairs.clear();
    await closed;
  }

  async restore(): Promise<void> {
    this.server = this.makeServer();
    await this.listen();
  }

  close(): void {
    for (const pair of this.pairs) for (const socket of pair) socket.destroy();
    this.pairs.clear();
    this.server.close();
  }
}
