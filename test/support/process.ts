/** Waits until a server started as a process answers `GET /v1/status` with 200 (up to 40 s). */
export const waitForStatus = async (port: number, tries = 160) => {
  for (let i = 0; i < tries; i++) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/v1/status`)
      if (res.status === 200) return
    } catch {
      // not listening yet
    }
    await Bun.sleep(250)
  }
  throw new Error("server did not start")
}
