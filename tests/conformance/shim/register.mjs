// Node 20 lacks fs.globSync, which the conformance runner imports by name from "fs"; a
// resolve hook points that bare specifier at fs-with-glob.mjs (see
// ../shared/reference/mcp-streamable-http.md §11). Unused on Node >= 22.
import { register } from "node:module";

register("./hooks.mjs", import.meta.url);
