"""HumanEval and MBPP in JavaScript, C++, Java and Rust (see ``docs/languages.md``).

``types`` (the Python type model), ``translate`` (signature and call arguments of a Python
problem), one module per language (``javascript``, ``cpp``, ``java``, ``rust``: types,
literals, stub, driver, toolchain), ``assemble`` (completion → program), ``launch`` and
``spawner`` (the warm sandbox per worker thread that starts every compile and run, and measures
it), ``sandboxed`` (limits, uids, bubblewrap's view), ``compile_cache`` and ``runner`` (compile,
run every case, decode the values for the trusted checks).
"""
