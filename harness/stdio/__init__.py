"""Programs that read stdin and write stdout (competitive programming), judged over many tests.

:mod:`harness.stdio.problem` is the problem shape and its constructor (``stdio_problem``).
"""
