"""Third-party modules for candidate programs, resolved outside the sandbox.

A suite allows imports by name, each pinned (:mod:`harness.deps.pins`); ``codeeval deps fetch``
installs them once into an overlay folder (:mod:`harness.deps.fetch`,
:mod:`harness.deps.overlay`) that the sandbox mounts read-only; runs never download. See
docs/dependencies.md. (Nothing is imported here: the sandbox imports only the light
:mod:`harness.deps.overlay`.)
"""
