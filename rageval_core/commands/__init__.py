"""Subcommands of `rageval`, one module each, discovered by `rageval_core.cli`."""
