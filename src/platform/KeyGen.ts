import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import nacl from "tweetnacl"

export interface X25519KeyPair {
  /** base64, as WireGuard writes keys */
  readonly privateKey: string
  readonly publicKey: string
}

const toBase64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64")

/** X25519 key pairs for WireGuard peers (tweetnacl). */
export class KeyGen extends Context.Tag("KeyGen")<
  KeyGen,
  {
    readonly x25519: Effect.Effect<X25519KeyPair>
  }
>() {
  static readonly Live = Layer.succeed(KeyGen, {
    x25519: Effect.sync(() => {
      const pair = nacl.box.keyPair()
      return { privateKey: toBase64(pair.secretKey), publicKey: toBase64(pair.publicKey) }
    })
  })

  /** Deterministic pairs: the n-th pair comes from the secret key [n, n, ..., n]. */
  static readonly Test = Layer.sync(KeyGen, () => {
    let n = 0
    return {
      x25519: Effect.sync(() => {
        n = (n % 255) + 1
        const pair = nacl.box.keyPair.fromSecretKey(new Uint8Array(32).fill(n))
        return { privateKey: toBase64(pair.secretKey), publicKey: toBase64(pair.publicKey) }
      })
    }
  })

  /** The public key of a base64 private key (what `wg pubkey` prints). */
  static readonly publicKeyOf = (privateKey: string): string =>
    toBase64(nacl.box.keyPair.fromSecretKey(new Uint8Array(Buffer.from(privateKey, "base64"))).publicKey)
}
