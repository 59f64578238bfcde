"""Third-party modules for candidate programs, resolved outside the sandbox.

A suite, a JSONL problem or a reward config allows imports by name, each pinned
(:mod:`harness.deps.pins`, :mod:`harness.deps.sources`); a run merges a problem's list with its
reward config's and puts the fetched overlay on the problem's path, or makes it a data defect
naming the command (:mod:`harness.deps.resolve`); ``codeeval deps fetch`` installs each list
once into an overlay folder (:mod:`harness.deps.fetch`, :mod:`harness.deps.overlay`) that the
sandbox mounts read-only; runs never download. See docs/dependencies.md. (Nothing is imported
here: the sandbox imports only the light :mod:`harness.deps.overlay`.)
"""
