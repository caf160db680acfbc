/** Whether an `If-None-Match` value names `etag` (weak comparison, RFC 9110 13.1.2), or is `*`. */
export const matchesEtag = (header: string | undefined, etag: string): boolean => {
  if (header === undefined || header === "") return false
  if (header.trim() === "*") return true
  for (const candidate of header.split(",")) {
    const tag = candidate.trim()
    if ((tag.startsWith("W/") ? tag.slice(2) : tag) === etag) return true
  }
  return false
}
