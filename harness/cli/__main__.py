"""``python -m harness.cli``: the ``codeeval`` command."""

from harness.cli import main

raise SystemExit(main())
