import notoSansBold from "../../../node_modules/@expo-google-fonts/noto-sans/700Bold/NotoSans_700Bold.ttf" with { type: "file" }
import notoSans from "../../../node_modules/@expo-google-fonts/noto-sans/400Regular/NotoSans_400Regular.ttf" with { type: "file" }
import notoSansSc from "../../../node_modules/@expo-google-fonts/noto-sans-sc/400Regular/NotoSansSC_400Regular.ttf" with { type: "file" }
import vazirmatnBold from "../../../node_modules/@expo-google-fonts/vazirmatn/700Bold/Vazirmatn_700Bold.ttf" with { type: "file" }
import vazirmatn from "../../../node_modules/@expo-google-fonts/vazirmatn/400Regular/Vazirmatn_400Regular.ttf" with { type: "file" }

/**
 * The invoice PDF's fonts ([D113], [D120]), TrueType files of Google's Noto Sans (Latin, Cyrillic,
 * Greek), Vazirmatn (Persian) and Noto Sans SC (Chinese) as the `@expo-google-fonts` packages ship
 * them (OFL), imported as files so that `bun build --compile` embeds them (about 12 MB, most of it
 * the Chinese font). Read at the first PDF that needs each; pdf-lib embeds only the glyphs used.
 */
export type Script = "latin" | "arabic" | "cjk"

const FILES: { readonly [S in Script]: { readonly regular: string; readonly bold: string } } = {
  latin: { regular: notoSans, bold: notoSansBold },
  arabic: { regular: vazirmatn, bold: vazirmatnBold },
  // one weight: a bold Chinese face would add another 10 MB to the binary
  cjk: { regular: notoSansSc, bold: notoSansSc }
}

const loaded = new Map<string, Promise<Uint8Array>>()

export const fontBytes = (script: Script, weight: "regular" | "bold"): Promise<Uint8Array> => {
  const path = FILES[script][weight]
  let bytes = loaded.get(path)
  if (bytes === undefined) {
    bytes = Bun.file(path)
      .arrayBuffer()
      .then((buffer) => new Uint8Array(buffer))
    loaded.set(path, bytes)
  }
  return bytes
}

/** which of the three fonts draws a character; `undefined` for one that takes its neighbour's */
export const scriptOf = (char: string): Script | undefined => {
  const c = char.codePointAt(0)!
  if (c === 0x20 || (c >= 0x200b && c <= 0x200f)) return undefined
  if ((c >= 0x0600 && c <= 0x06ff) || (c >= 0x0750 && c <= 0x077f) || (c >= 0xfb50 && c <= 0xfdff) || (c >= 0xfe70 && c <= 0xfeff)) {
    return "arabic"
  }
  if (
    (c >= 0x2e80 && c <= 0x9fff) ||
    (c >= 0xac00 && c <= 0xd7af) ||
    (c >= 0xf900 && c <= 0xfaff) ||
    (c >= 0xff00 && c <= 0xffef) ||
    (c >= 0x20000 && c <= 0x3ffff)
  )
    return "cjk"
  return "latin"
}
