// Resolves the bare specifier "fs" to node:fs plus a globSync (Node 20 only).
import * as fs from "node:fs";

const shim = new URL("./fs-with-glob.mjs", import.meta.url).href;
const needed = typeof fs.globSync !== "function";

export async function resolve(specifier, context, nextResolve) {
  if (needed && specifier === "fs" && context.parentURL !== shim) {
    return { url: shim, shortCircuit: true };
  }
  return nextResolve(specifier, context);
}
