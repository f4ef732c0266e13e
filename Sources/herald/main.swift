import HeraldCLI

// herald: reads the command line and runs it (Sources/HeraldCLI); the exit status says how it
// went (docs/cli.md).
await HeraldCommandLine.main()
