/**
 * Each rule of the dependency rule (docs/architecture.md, .dependency-cruiser.cjs) catches the
 * arrow it forbids, on a scratch tree: a rule whose pattern matched nothing would otherwise pass
 * unnoticed. The repository itself is checked by `npm run lint:deps` at the start of npm test.
 */
import { describe, expect, it } from 'vitest'
import fs from 'node:fs'
import path from 'node:path'
import { createRequire } from 'node:module'
import { cruise, type ICruiseOptions } from 'dependency-cruiser'
import { tmpDir } from '../helpers.ts'

const ROOT = path.resolve(import.meta.dirname, '../..')
const config = createRequire(import.meta.url)(path.join(ROOT, '.dependency-cruiser.cjs')) as { forbidden: unknown[]; options: ICruiseOptions }

async function violations(baseDir: string, dirs: string[], options: ICruiseOptions): Promise<string[]> {
  const cwd = process.cwd()
  process.chdir(baseDir)
  try {
    const result = await cruise(dirs, { ...options, validate: true, ruleSet: { forbidden: config.forbidden } as ICruiseOptions['ruleSet'], outputType: 'json' })
    const out = typeof result.output === 'string' ? JSON.parse(result.output) : result.output
    return out.summary.violations.map((v: { rule: { name: string }; from: string; to: string }) => `${v.rule.name}: ${v.from} → ${v.to}`).sort()
  } finally {
    process.chdir(cwd)
  }
}

describe('dependency rule', () => {
  it('each rule catches the arrow it forbids', async () => {
    const dir = tmpDir('arch')
    const files: Record<string, string> = {
      'common/base.ts': "import { x } from '../pipelines/ingest/index.ts'\nexport const base = x",
      'pipelines/ingest/index.ts': "export { x } from './inner.ts'",
      'pipelines/ingest/inner.ts': 'export const x = 1',
      'pipelines/features/ok.ts': "import { x } from '../ingest/index.ts'\nexport const ok = x",
      'pipelines/features/reach-in.ts': "import { x } from '../ingest/inner.ts'\nexport const y = x",
      'pipelines/features/up.ts': "import { api } from '../../services/api/app.ts'\nexport const z = api",
      'pipelines/features/index.ts': "export { ok } from './ok.ts'",
      'pipelines/loop-a/index.ts': "import { b } from '../loop-b/index.ts'\nexport const a = () => b",
      'pipelines/loop-b/index.ts': "import { a } from '../loop-a/index.ts'\nexport const b = () => a",
      'services/api/app.ts': "import { ok } from '../../pipelines/features/index.ts'\nimport { sim } from '../simulators/app.ts'\nexport const api = [ok, sim]",
      'services/simulators/app.ts': 'export const sim = 1',
    }
    for (const [f, text] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(dir, f)), { recursive: true })
      fs.writeFileSync(path.join(dir, f), text + '\n')
    }
    const { tsConfig: _ignored, ...options } = config.options as ICruiseOptions & { tsConfig?: unknown }
    expect(await violations(dir, ['common', 'pipelines', 'services'], options)).toEqual([
      'common-imports-no-lane: common/base.ts → pipelines/ingest/index.ts',
      'lanes-meet-at-their-index: pipelines/features/reach-in.ts → pipelines/ingest/inner.ts',
      'lanes-never-import-services: pipelines/features/up.ts → services/api/app.ts',
      'no-circular-lanes: pipelines/loop-a/index.ts → pipelines/loop-b/index.ts',
      'services-do-not-import-each-other: services/api/app.ts → services/simulators/app.ts',
    ])
  })
})
