"""HumanEval and MBPP in JavaScript, C++, Java and Rust (see ``docs/languages.md``).

``types`` (the Python type model), ``translate`` (signature and call arguments of a Python
problem), one module per language (``javascript``, ``cpp``, ``java``, ``rust``: types,
literals, stub, driver, toolchain), ``assemble`` (completion → program), ``launch`` and
``spawner`` (the warm sandbox per worker thread that starts every compile and run, and measures
it), ``sandboxed`` (limits, uids, bubblewrap's view), ``compile_cache`` and ``runner`` (compile,
run every case, decode the values for the trusted checks), ``rewards`` (what each reward part
means here), ``hooks`` (what the core calls, and :func:`register`).

Importing this package registers the four languages with the core
(:mod:`harness.language_hooks`). A new language is a module with a
:class:`~harness.languages.base.Language` subclass, added to the tuple below.
"""

from harness.languages.cpp import Cpp
from harness.languages.hooks import register
from harness.languages.java import Java
from harness.languages.javascript import JavaScript
from harness.languages.multiple_e import DIALECTS
from harness.languages.registry import get_language, language_for, names
from harness.languages.rust import Rust

for _language in (JavaScript(), Cpp(), Java(), Rust()):
    register(_language)

NAMES = names()  # the languages registered here, in the order suites list them

# MultiPL-E's own programs in the same four languages (suites.multiple_e): registered after
# NAMES, since they run MultiPL-E's prompts and tests, never the project's translations.
for _dialect in DIALECTS:
    register(_dialect)

__all__ = ["NAMES", "get_language", "language_for", "register"]
