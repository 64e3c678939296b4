import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vite'

/**
 * The console's build (docs/console.md): one bundle under dist/, served by the api role at
 * /console. Preact's automatic JSX runtime; every asset bundled (no CDN, works offline).
 * `npm run dev:console` serves it with hot reload and forwards the API to a running `cdp start`.
 */
const api = process.env.CDP_CONSOLE_API ?? 'http://127.0.0.1:8080'

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/console/',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  resolve: { alias: { react: 'preact/compat', 'react-dom': 'preact/compat' } },
  build: { outDir: 'dist', emptyOutDir: true, target: 'es2022', chunkSizeWarningLimit: 600 },
  server: { port: 5173, proxy: { '/api': api, '/health': api } },
  logLevel: 'warn',
})
