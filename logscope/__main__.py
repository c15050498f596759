"""``python -m logscope``."""

from logscope.cli import main

raise SystemExit(main())
