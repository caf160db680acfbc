import * as FiberRef from "effect/FiberRef"

/**
 * Where the request being answered comes from: the client's address (as `TRUST_PROXY` reads
 * it) and its `User-Agent`, cut to 255 characters. Set around every request by the HTTP layer;
 * read by the rooms that record it (sessions of [D99], the audit log of [D100]) without
 * knowing HTTP. Outside a request (jobs, CLI) both are null.
 */
export interface RequestOrigin {
  readonly ip: string | null
  readonly userAgent: string | null
}

export const requestOrigin = FiberRef.unsafeMake<RequestOrigin>({ ip: null, userAgent: null })

export const MAX_USER_AGENT = 255
