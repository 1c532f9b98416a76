// Builds the preview panel into one self-contained HTML file: the bundled script is inlined
// into the template, so the panel loads nothing from anywhere. The output must be
// byte-for-byte reproducible, because CI rebuilds it and diffs against the committed file.
import { build } from "esbuild";
import { readFile, writeFile, mkdir } from "node:fs/promises";

const here = new URL(".", import.meta.url);
const bundle = await build({
  entryPoints: [new URL("src/panel.ts", here).pathname],
  bundle: true,
  format: "iife",
  platform: "browser",
  target: "es2022",
  minify: true,
  legalComments: "eof",
  charset: "utf8",
  write: false,
  logLevel: "warning",
});
// A literal "</script" inside the inlined code would end the script element early.
const script = bundle.outputFiles[0].text.replaceAll("</script", "<\\/script");
const template = await readFile(new URL("src/panel.html", here), "utf8");
const marker = "<!--PANEL_SCRIPT-->";
if (!template.includes(marker)) throw new Error(`src/panel.html lacks ${marker}`);
const html = template.replace(marker, () => `<script>${script}</script>`);
await mkdir(new URL("dist/", here), { recursive: true });
await writeFile(new URL("dist/preview-message.html", here), html);
