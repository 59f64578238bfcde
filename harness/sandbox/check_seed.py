"""The seed of a sample's judged checks: one the candidate cannot know.

A sandbox-mode check (judge.py) may draw its inputs with ``random`` (HumanEval/38 and /50
encode random strings and assert that the candidate decodes them). Seeded with the sample's
public ``seed``, which the candidate's own child is seeded with too, a program could replay
the check's draws and return the expected answers without implementing anything. So the judge
is seeded with :func:`check_seed` instead: a keyed hash (BLAKE2b) of the public seed and the
program, under a secret drawn once per trusted process and never sent to the sandbox. Within
one run the same program and seed get the same check inputs (a rerun's verdict is the same),
each of the calibration's seeds gets other ones, and no two processes agree.

What is not defended: a program that rebuilds the Mersenne Twister's state from the inputs it
is handed within one sample (624 32-bit outputs) could predict the rest of that sample's draws.
"""

from __future__ import annotations

import hashlib
import os

# Drawn once per process; a forked worker inherits it (the same run), a spawned one draws its own.
_SECRET = os.urandom(32)
_PERSON = b"codeeval-check"  # BLAKE2b's personalization: this hash is used for nothing else


def check_seed(seed: int, program: str, secret: bytes | None = None) -> int:
    """The int the judge seeds ``random`` with for ``program`` run with public ``seed``
    (``secret``: this process's own unless given, for tests)."""
    digest = hashlib.blake2b(
        key=_SECRET if secret is None else secret, digest_size=16, person=_PERSON
    )
    digest.update(b"%d\0" % int(seed))  # the seed's digits never hold a NUL: no ambiguity
    digest.update(program.encode("utf-8", "surrogatepass"))
    return int.from_bytes(digest.digest(), "big")
