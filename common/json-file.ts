import fs from 'node:fs'
import path from 'node:path'

/**
 * Writes `value` as JSON to `file` all at once or not at all: to a file of this process's own beside
 * it, flushed to disk, then renamed over it. A reader (another process too) sees the old file or
 * the new one, never half of one; a crash leaves the old one. `space` indents, as JSON.stringify.
 */
export function writeJsonAtomic(file: string, value: unknown, space?: number): void {
  fs.mkdirSync(path.dirname(file), { recursive: true })
  const tmp = `${file}.${process.pid}.tmp`
  const fd = fs.openSync(tmp, 'w')
  try {
    fs.writeSync(fd, JSON.stringify(value, null, space))
    fs.fdatasyncSync(fd)
  } finally {
    fs.closeSync(fd)
  }
  fs.renameSync(tmp, file)
}
