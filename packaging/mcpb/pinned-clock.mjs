// Loaded with `node --import` before the mcpb CLI: pins `new Date()` (without arguments) and
// `Date.now()` to SOURCE_DATE_EPOCH. `mcpb pack` stamps every zip entry with the current time,
// so without this two packings of the same files differ; with it they are byte-identical.
const epoch = process.env.SOURCE_DATE_EPOCH ?? "";
if (!/^[0-9]+$/.test(epoch)) {
  throw new Error("pinned-clock.mjs: set SOURCE_DATE_EPOCH to whole seconds since 1970");
}
const pinned = Number(epoch) * 1000;
const SystemDate = Date;
class PinnedDate extends SystemDate {
  constructor(...args) {
    if (args.length === 0) super(pinned);
    else super(...args);
  }
  static now() {
    return pinned;
  }
}
globalThis.Date = PinnedDate;
