"""The one evaluation pipeline: prepare a run, compile its suite, judge its samples, score rows.

The plugin's session, :func:`harness.evaluate.evaluate`, the executors and the reward service
all call it. Importing it also registers the products built on the core (the compiled
languages), which the core consults through its registries.
"""

import harness.languages  # noqa: F401  (registers the compiled languages with the core)
