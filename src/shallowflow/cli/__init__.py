"""The command line: the commands (:mod:`shallowflow.cli.commands`) and the process they run in
(:mod:`shallowflow.cli.process`: signals, the one error guard, exit codes). ``main`` is the
``shallowflow`` command's entry point."""

from shallowflow.cli.commands import app, main

__all__ = ["app", "main"]
