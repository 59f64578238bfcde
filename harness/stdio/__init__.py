"""Programs that read stdin and write stdout (competitive programming), judged over many tests.

:mod:`harness.stdio.problem` is the problem shape and its one constructor (``stdio_problem``);
:mod:`harness.stdio.execute` runs a program on every test (Python: a fork of the warm server
per test; C++, Java, Rust, JavaScript: compiled once, then started per test in the warm
sandbox) and judges each output in the trusted process (:mod:`harness.stdio.checkers`, or the
problem's special judge, sandboxed: :mod:`harness.stdio.special`). Importing this package
registers the ``stdio-<language>`` hooks with the core (:mod:`harness.stdio.hooks`).
"""

from harness.stdio.hooks import register_all

register_all()
