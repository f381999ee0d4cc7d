"""Subcommand modules: ``add_arguments(parser)`` and ``run(args) -> int`` each."""
