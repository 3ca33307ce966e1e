"""The `zymi-tui` subcommands, one module per area. Each module has `register(subparsers)`."""
