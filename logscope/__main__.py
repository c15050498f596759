"""``python -m logscope``."""

from logscope.cli import run

run()
