// the browser build of `qrcode` (its package's `browser` field names it; the compiled binary's bundler needs it named)
declare module "qrcode/lib/browser.js" {
  export { toDataURL } from "qrcode"
}
