import { createHash } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { writeJsonAtomic } from '../json-file.ts'

/**
 * Worker threads from one JavaScript file each. The sources run through tsx (bin/cdp.mjs: no build
 * step), and a worker that registers tsx and imports its TypeScript entry is ready after about
 * 250 ms (tsx's own loader thread, then each module transformed on its way in), where a consumer's
 * decode thread is wanted at once: until it is ready the consumer decodes on its main thread.
 *
 * So the first thread of an entry has esbuild bundle the entry and the project's modules it
 * imports into one ES module (packages stay imports: node_modules is beside it), in the background,
 * into `node_modules/.cache/cdp-workers/`, with a manifest of the sources it was built from (path,
 * size, modification time). Later threads, in this process or the next, start from the bundle
 * while none of those sources changed: ready in a few tens of milliseconds. A changed source, or a
 * cache that cannot be written (a read-only install), only means the tsx entry again.
 * `CDP_WORKER_BUNDLES=0` turns bundles off.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
export const DEFAULT_CACHE_DIR = path.join(ROOT, 'node_modules', '.cache', 'cdp-workers')

/** A source changed this shortly before its bundle's build keeps the bundle from being used. */
const FRESH_MARGIN_MS = 2_000

/** A bundle's sources as they were when it was built. */
type Manifest = { sources: [file: string, size: number, mtimeMs: number][] }

const builds = new Map<string, Promise<URL | null>>()

/** Where the bundle of a TypeScript entry and its manifest are kept (the name tells checkouts apart). */
function cachePaths(entry: string, cacheDir: string) {
  const name = `${path.basename(entry, '.ts')}-${createHash('sha256').update(entry).digest('hex').slice(0, 12)}`
  return { bundle: path.join(cacheDir, `${name}.mjs`), manifest: path.join(cacheDir, `${name}.json`) }
}

function unchanged(m: Manifest): boolean {
  if (!Array.isArray(m.sources) || m.sources.length === 0) return false
  for (const [file, size, mtimeMs] of m.sources) {
    const st = fs.statSync(file, { throwIfNoEntry: false })
    if (!st || st.size !== size || st.mtimeMs !== mtimeMs) return false
  }
  return true
}

/**
 * The bundle of `entry` (a worker's TypeScript entry module) when one is built from its sources as
 * they are now; else null, and a build starts in the background for the threads after.
 */
export function workerBundle(entry: URL, cacheDir = DEFAULT_CACHE_DIR): URL | null {
  if (process.env.CDP_WORKER_BUNDLES === '0') return null
  const file = fileURLToPath(entry)
  const { bundle, manifest } = cachePaths(file, cacheDir)
  try {
    if (unchanged(JSON.parse(fs.readFileSync(manifest, 'utf8')) as Manifest) && fs.existsSync(bundle)) return pathToFileURL(bundle)
  } catch {
    // No manifest yet, or an unreadable one: build.
  }
  void buildWorkerBundle(entry, cacheDir)
  return null
}

/**
 * Builds the bundle of `entry` (one build at a time per entry); null when it cannot be built or a
 * source changed while it was. The manifest is written last, so a bundle is used only once whole.
 */
export function buildWorkerBundle(entry: URL, cacheDir = DEFAULT_CACHE_DIR): Promise<URL | null> {
  const file = fileURLToPath(entry)
  const { bundle, manifest } = cachePaths(file, cacheDir)
  let running = builds.get(bundle)
  if (running) return running
  const tmp = `${bundle}.${process.pid}.tmp`
  running = (async () => {
    const started = Date.now()
    const esbuild = await import('esbuild')
    fs.mkdirSync(cacheDir, { recursive: true })
    const result = await esbuild.build({
      entryPoints: [file],
      absWorkingDir: ROOT,
      bundle: true,
      packages: 'external',
      platform: 'node',
      format: 'esm',
      target: `node${process.versions.node.split('.')[0]}`,
      outfile: tmp,
      metafile: true,
      logLevel: 'silent',
    })
    // Its service process is not needed until the next build.
    void esbuild.stop()
    const sources: Manifest['sources'] = []
    for (const input of Object.keys(result.metafile.inputs)) {
      const abs = path.resolve(ROOT, input)
      const st = fs.statSync(abs)
      // Changed shortly before or while it was bundled (an editor saving; file times may lag the
      // clock a little): the bundle may hold the old text, so it is not kept; a later thread builds again.
      if (st.mtimeMs >= started - FRESH_MARGIN_MS) return null
      sources.push([abs, st.size, st.mtimeMs])
    }
    fs.renameSync(tmp, bundle)
    writeJsonAtomic(manifest, { sources } satisfies Manifest)
    return pathToFileURL(bundle)
  })()
    .catch(() => null)
    .finally(() => {
      fs.rmSync(tmp, { force: true })
      builds.delete(bundle)
    })
  builds.set(bundle, running)
  return running
}
