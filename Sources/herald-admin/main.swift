import HeraldAdminCLI

// herald-admin: the server-side tools (Sources/HeraldAdminCLI); `herald dev`, `herald migrate`,
// `herald kafka` and `herald credentials` run it (docs/cli.md).
await HeraldAdminCommandLine.main()
