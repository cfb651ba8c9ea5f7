import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

// The page is built to static files that the playground's own server (src/web/server.ts) serves.
export default defineConfig({
  root: fileURLToPath(new URL("./web", import.meta.url)),
  base: "./",
  logLevel: "warn",
  build: {
    outDir: fileURLToPath(new URL("./dist/web", import.meta.url)),
    emptyOutDir: true,
    target: "es2022",
    modulePreload: false,
  },
});
