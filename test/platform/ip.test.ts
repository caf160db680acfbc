import { expect, test } from "bun:test"
import fc from "fast-check"
import { isIP as nodeIsIP } from "node:net"
import { isIP } from "../../src/platform/Ip.ts"

// issue 34: the contract validates addresses without `node:net`; the same answers as Node's isIP
test("platform/Ip.ts isIP answers as node:net's, on addresses and near-misses", () => {
  for (const s of ["1.2.3.4", "01.2.3.4", "256.1.1.1", "::", "::1", "fe80::1%eth0", "::ffff:1.2.3.4", "1:2:3:4:5:6:7:8:9", " 1.2.3.4", ""]) {
    expect({ s, family: isIP(s) }).toEqual({ s, family: nodeIsIP(s) as 0 | 4 | 6 })
  }
  const near = fc.array(fc.constantFrom(..."0123456789abcdefABCDEF.:%/ xg".split("")), { maxLength: 40 }).map((a) => a.join(""))
  fc.assert(
    fc.property(fc.oneof(near, fc.ipV4(), fc.ipV6(), fc.ipV4Extended()), (s) => isIP(s) === nodeIsIP(s)),
    { numRuns: 20_000 }
  )
})
