// Bun's `with { type: "file" }` imports give the file's path (inside a compiled binary too).
declare module "*.ttf" {
  const path: string
  export default path
}
