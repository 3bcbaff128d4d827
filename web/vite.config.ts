// The dashboard's build: fingerprinted files under assets/ (the gateway serves them with a year's
// cache) and an index.html without inline script, so the page runs under a strict CSP.
import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";
import { fileURLToPath } from "node:url";

export default defineConfig({
  root: fileURLToPath(new URL(".", import.meta.url)),
  plugins: [react()],
  // The SDK and contract from their sources, so the page never runs on a stale sdk/dist.
  resolve: {
    alias: [
      { find: /^@svc\/sdk\/contract$/, replacement: fileURLToPath(new URL("../sdk/src/contract.ts", import.meta.url)) },
      { find: /^@svc\/sdk$/, replacement: fileURLToPath(new URL("../sdk/src/index.ts", import.meta.url)) },
    ],
  },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    assetsInlineLimit: 0,
    // The module preload polyfill is the one piece Vite would otherwise inline.
    modulePreload: { polyfill: false },
    chunkSizeWarningLimit: 1500,
  },
});
