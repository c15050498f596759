"""``python -m logscope``."""

from logscope.command import run

run()
