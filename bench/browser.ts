import fs from 'node:fs'
import { chromium, type Browser } from 'playwright-core'

/**
 * Debian's Chromium driven by playwright-core (the console's browser tests and `bench:console`).
 * `.ci/run` installs the `chromium` package; CDP_CHROMIUM points elsewhere. The flags keep it
 * off the network it cannot reach here (background services, component updates, sync).
 */
export const CHROMIUM = process.env.CDP_CHROMIUM ?? '/usr/bin/chromium'

export async function launchChromium(): Promise<Browser> {
  if (!fs.existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: install Debian's chromium package (apt-get install chromium; .ci/run does) or set CDP_CHROMIUM`)
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  })
}
