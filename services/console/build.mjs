// Builds the console into services/console/dist (`npm install` runs this as `prepare`; so does
// `npm run build:console` through vite itself). Without Vite (an install without dev
// dependencies, as in the Docker image's runtime stage, which copies a built dist instead) it
// says so and leaves the console unbuilt rather than failing the install.
import { fileURLToPath } from 'node:url'

const config = fileURLToPath(new URL('./vite.config.ts', import.meta.url))
let vite
try {
  vite = await import('vite')
} catch {
  console.warn('[console] vite is not installed (dev dependencies omitted): the console is not built; /console answers 503')
  process.exit(0)
}
const t = performance.now()
await vite.build({ configFile: config, logLevel: 'warn' })
console.log(`[console] built into services/console/dist in ${Math.round(performance.now() - t)} ms`)
