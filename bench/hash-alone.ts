/**
 * What `Bun.password.verify` alone sustains with `pool` verifications in flight at once
 * (the ceiling for login at HASH_CONCURRENCY = pool). Prints one JSON line.
 *   bun bench/hash-alone.ts <pool> <seconds> <hash> <password>
 */
const [poolArg, secondsArg, hash, password] = process.argv.slice(2)
const pool = Number(poolArg)
const seconds = Number(secondsArg)
if (!pool || !seconds || !hash || !password) throw new Error("usage: hash-alone.ts <pool> <seconds> <hash> <password>")

// warm the thread pool first
await Promise.all(Array.from({ length: pool }, () => Bun.password.verify(password, hash)))
let done = 0
const start = performance.now()
const end = start + seconds * 1000
await Promise.all(
  Array.from({ length: pool }, async () => {
    while (performance.now() < end) {
      if (!(await Bun.password.verify(password, hash))) throw new Error("the hash does not match the password")
      done++
    }
  })
)
const elapsed = (performance.now() - start) / 1000
console.log(JSON.stringify({ pool, verifies: done, seconds: elapsed, perSecond: done / elapsed }))
export {}
