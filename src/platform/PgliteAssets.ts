import initdbWasm from "../../node_modules/@electric-sql/pglite/dist/initdb.wasm" with { type: "file" }
import pgliteData from "../../node_modules/@electric-sql/pglite/dist/pglite.data" with { type: "file" }
import pgliteWasm from "../../node_modules/@electric-sql/pglite/dist/pglite.wasm" with { type: "file" }

/**
 * PGlite's WebAssembly and file-system bundle, imported as files so that `bun build --compile`
 * embeds them in the binary (which has no node_modules to load them from).
 */
export const loadPgliteAssets = async () => {
  const [pgliteWasmModule, initdbWasmModule] = await Promise.all([
    Bun.file(pgliteWasm)
      .arrayBuffer()
      .then((bytes) => WebAssembly.compile(bytes)),
    Bun.file(initdbWasm)
      .arrayBuffer()
      .then((bytes) => WebAssembly.compile(bytes))
  ])
  const fsBundle = new Blob([await Bun.file(pgliteData).arrayBuffer()])
  return { pgliteWasmModule, initdbWasmModule, fsBundle }
}
