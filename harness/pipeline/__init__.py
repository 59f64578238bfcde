"""The one evaluation pipeline: prepare a run, compile its suite, judge its samples, score rows.

The plugin's session, :func:`harness.evaluate.evaluate` and the executors' actors all call
it. It imports only the core below it; the products built on the core (the compiled
languages, the plus cases) register themselves through :mod:`harness.extensions`.
"""
