import { defineConfig } from "tsup";

export default defineConfig({
  // The reaper's script is an entry of its own: the pool runs it, as dist/reaper-process.js, with
  // `process.execPath` (see src/reaper.ts). What it shares with index.js goes in a chunk beside them.
  entry: ["src/index.ts", "src/reaper-process.ts"],
  format: ["esm"],
  dts: { entry: "src/index.ts" },
  sourcemap: true,
  clean: true,
  target: "es2022",
  platform: "node",
});
