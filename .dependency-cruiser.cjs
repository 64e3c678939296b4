/**
 * The dependency rule (docs/architecture.md), checked by `npm run lint:deps` inside `npm test`.
 *
 *   common/     imports no lane and no service
 *   pipelines/  a lane imports common/ and other lanes only through their index.ts; never services/
 *   services/   the deployables (api, simulators) import common/ and pipelines/, not each other
 *   cli/, bench/ compose everything; production code never imports test/
 */
module.exports = {
  forbidden: [
    {
      name: 'common-imports-no-lane',
      comment: 'common/ is the base every lane stands on: it must not know any lane, service, command or test. Move the shared part into common/, or the code into the lane that needs it.',
      severity: 'error',
      from: { path: '^common/' },
      to: { path: '^(pipelines|services|cli|bench|test)/' },
    },
    {
      name: 'lanes-never-import-services',
      comment: 'A lane in pipelines/ must not import services/ (the deployables): the dependency runs services -> pipelines. Move what both need into the lane (or common/).',
      severity: 'error',
      from: { path: '^pipelines/' },
      to: { path: '^(services|cli|bench|test)/' },
    },
    {
      name: 'lanes-meet-at-their-index',
      comment: "A lane may use another lane only through that lane's public surface, pipelines/<lane>/index.ts; export what you need there instead of reaching into its files.",
      severity: 'error',
      from: { path: '^pipelines/([^/]+)/' },
      to: { path: '^pipelines/[^/]+/', pathNot: ['^pipelines/$1/', '^pipelines/[^/]+/index\\.ts$'] },
    },
    {
      name: 'services-do-not-import-each-other',
      comment: 'Each folder in services/ is its own deployable (api, simulators, console): share code through pipelines/ or common/, and wire them together in cli/.',
      severity: 'error',
      from: { path: '^services/([^/]+)/' },
      to: { path: '^services/', pathNot: '^services/$1/' },
    },
    {
      name: 'no-circular-lanes',
      comment: 'Lanes form a directed graph: two lanes that need each other should be one lane, or share through common/.',
      severity: 'error',
      from: { path: '^pipelines/([^/]+)/' },
      to: { circular: true, path: '^pipelines/', pathNot: '^pipelines/$1/' },
    },
    {
      name: 'no-unresolvable',
      comment: 'An import that does not resolve to a file (a moved file, a typo).',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)node_modules/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'], extensions: ['.ts', '.js', '.mjs', '.cjs', '.json', '.d.ts'] },
    reporterOptions: { text: { highlightFocused: true } },
  },
}
