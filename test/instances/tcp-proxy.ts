import { createServer, connect, type Server, type Socket } from "node:net"

/**
 * A TCP proxy in front of PostgreSQL that a test steers like a failover would ([D126]): it can
 * refuse new connections (accepted, then closed at once, as HAProxy does with no primary up),
 * cut every open connection, or cut one connection at the moment the client sends a given
 * statement, either before forwarding it or after it reached the server (its reply dropped).
 */
export interface TcpProxy {
  readonly port: number
  /** new connections are closed at once while true */
  refuse: boolean
  /** closes every open connection */
  cutAll(): void
  /**
   * the next time a client sends bytes containing `marker`: `before` drops them and closes the
   * connection; `after` forwards them, waits for the server to act, then closes the connection
   * without relaying the reply; with `refuseForMs`, every other connection is closed too and new
   * ones are refused for that long. Resolves when it happened.
   */
  cutAt(marker: string, when: "before" | "after", refuseForMs?: number): Promise<void>
  close(): Promise<void>
}

export const startTcpProxy = async (target: { host: string; port: number }): Promise<TcpProxy> => {
  const pairs = new Set<{ client: Socket; upstream: Socket }>()
  let trap: { marker: Buffer; when: "before" | "after"; refuseForMs: number; done: () => void } | undefined
  const proxy: TcpProxy = {
    port: 0,
    refuse: false,
    cutAll: () => {
      for (const { client, upstream } of pairs) {
        client.destroy()
        upstream.destroy()
      }
      pairs.clear()
    },
    cutAt: (marker, when, refuseForMs = 0) =>
      new Promise<void>((done) => {
        trap = { marker: Buffer.from(marker), when, refuseForMs, done }
      }),
    close: () =>
      new Promise<void>((resolve) => {
        proxy.cutAll()
        server.close(() => resolve())
      })
  }
  const server: Server = createServer((client) => {
    if (proxy.refuse) {
      client.destroy()
      return
    }
    const upstream = connect(target.port, target.host)
    const pair = { client, upstream }
    pairs.add(pair)
    let mute = false
    const end = () => {
      pairs.delete(pair)
      client.destroy()
      upstream.destroy()
    }
    client.on("error", end)
    upstream.on("error", end)
    client.on("close", end)
    upstream.on("close", end)
    upstream.on("data", (chunk: Buffer) => {
      if (!mute) client.write(chunk)
    })
    client.on("data", (chunk: Buffer) => {
      const armed = trap
      if (armed !== undefined && chunk.includes(armed.marker)) {
        trap = undefined
        mute = true
        if (armed.refuseForMs > 0) {
          // the database is gone for everyone: every open connection too
          for (const other of pairs)
            if (other !== pair) {
              other.client.destroy()
              other.upstream.destroy()
            }
          proxy.refuse = true
          setTimeout(() => {
            proxy.refuse = false
          }, armed.refuseForMs)
        }
        if (armed.when === "after") upstream.write(chunk)
        // the server has the statement (or not) before the connection goes
        setTimeout(
          () => {
            end()
            armed.done()
          },
          armed.when === "after" ? 200 : 0
        )
        return
      }
      upstream.write(chunk)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()))
  const address = server.address()
  ;(proxy as { port: number }).port = typeof address === "object" && address !== null ? address.port : 0
  return proxy
}
