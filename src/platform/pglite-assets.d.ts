// Bun's `with { type: "file" }` imports give the file's path (inside a compiled binary too).
declare module "*.wasm" {
  const path: string
  export default path
}
declare module "*.data" {
  const path: string
  export default path
}
