"""The suite registry: a benchmark name → its problems.

A loader is a callable ``load(data_dir: Path | None = None)`` that returns the data set's splits
as a mapping ``{split name: [Problem, ...]}`` in the data set's own order (or a plain list,
taken as the single split ``test``). The registry applies the split spec (``suites.splits``),
so loaders never slice. Loaders are registered by value or lazily as ``"module:function"``;
a lazily named module that is missing breaks only its own suite, never the registry.

Names: ``humaneval``, ``mbpp`` (full, 974), ``mbpp-sanitized`` (427), ``coophumaneval`` and
``classeval`` (when their modules exist), ``humaneval-plus``, ``humaneval-plus-mini`` and
``mbpp-plus`` (EvalPlus's HumanEval+ and MBPP+, ``suites.evalplus``),
``humaneval-js|cpp|java|rs`` and
``mbpp-sanitized-js|...`` (translated into other languages, ``suites.multipl``), and ``jsonl:PATH`` for a user's own
problems.
``NAME@OPTION`` passes OPTION to a loader that takes one (``load(data_dir, option)``): a stdio
suite's language or date window, ``livecodebench@2024-08-01..2025-02-01``, ``codecontests@cpp``.
``data_dir`` is the folder of local data mirrors; the default comes from the environment
variable ``CODEEVAL_DATA_DIR``; without either, loaders use their packaged copy or the hub.
"""

from __future__ import annotations

import importlib
import inspect
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from harness.gcpause import paused_gc
from harness.records import Problem
from suites.errors import SuiteError
from suites.splits import SplitError, select_split

DATA_DIR_ENV = "CODEEVAL_DATA_DIR"
JSONL_PREFIX = "jsonl:"
OPTION_SEP = "@"  # NAME@OPTION: the loader's option (a stdio suite's language, date window)

Splits = Mapping[str, Sequence[Problem]] | Sequence[Problem]
Loader = Callable[..., Splits]


_REGISTRY: dict[str, Loader | str] = {
    "humaneval": "suites.humaneval:load",
    "mbpp": "suites.mbpp:load_full",
    "mbpp-sanitized": "suites.mbpp:load_sanitized",
    "coophumaneval": "suites.coophumaneval:load",
    "classeval": "suites.classeval:load",
    "humaneval-plus": "suites.evalplus:load_humaneval_plus",
    "humaneval-plus-mini": "suites.evalplus:load_humaneval_plus_mini",
    "mbpp-plus": "suites.evalplus:load_mbpp_plus",
    # stdin -> stdout suites (docs/stdio_suites.md); NAME@OPTION picks a language or window
    "livecodebench": "suites.livecodebench:load",
    "codecontests": "suites.codecontests:load",
    "apps": "suites.apps:load",
    "apps-mini": "suites.apps_mini:load",  # the offline stdio smoke set (apps_mapcoder150)
    "taco": "suites.taco:load",
    **{  # humaneval-js, -cpp, -java, -rs and mbpp-sanitized-*: translated (suites.multipl)
        f"{base}-{lang}": f"suites.multipl:load_{base.replace('-', '_')}_{lang}"
        for base in ("humaneval", "mbpp-sanitized")
        for lang in ("js", "cpp", "java", "rs")
    },
    **{  # MultiPL-E's own prompts and tests, under the bigcode harness's names (suites.multiple_e)
        f"multiple-{lang}": f"suites.multiple_e:load_{lang}" for lang in ("js", "cpp", "java", "rs")
    },
}
_ALIASES = {
    "human-eval": "humaneval",
    "human_eval": "humaneval",
    "mbpp-full": "mbpp",
    "mbpp_sanitized": "mbpp-sanitized",
    "sanitized-mbpp": "mbpp-sanitized",
    "humaneval+": "humaneval-plus",
    "mbpp+": "mbpp-plus",
    "lcb": "livecodebench",
    "code_contests": "codecontests",
    "code-contests": "codecontests",
}
_CACHE: dict[tuple[str, str], dict[str, list[Problem]]] = {}
_LOCK = threading.Lock()


def register_suite(name: str, loader: Loader | str) -> None:
    """Register (or replace) a suite: a loader callable, or ``"module:function"`` for later."""
    if not name or name.startswith(JSONL_PREFIX):
        raise SuiteError(f"cannot register a suite named {name!r}")
    if isinstance(loader, str) and ":" not in loader:
        raise SuiteError(f"a lazy loader is 'module:function', got {loader!r}")
    with _LOCK:
        _REGISTRY[name.lower()] = loader
        for key in [k for k in _CACHE if k[0].partition(OPTION_SEP)[0] == name.lower()]:
            del _CACHE[key]


def known_suites() -> list[str]:
    """Registered suite names (``jsonl:PATH`` also works, for any path)."""
    return sorted(_REGISTRY)


def default_data_dir(data_dir: str | Path | None = None) -> Path | None:
    """``data_dir`` if given, else ``$CODEEVAL_DATA_DIR``, else ``None`` (packaged copy or hub)."""
    if data_dir is not None:
        return Path(data_dir)
    env = os.environ.get(DATA_DIR_ENV)
    return Path(env) if env else None


def load_suite(
    name: str, split: str | None = None, data_dir: str | Path | None = None
) -> list[Problem]:
    """The problems of suite ``name`` in split spec ``split`` (default ``test``)."""
    folder = default_data_dir(data_dir)
    splits = load_splits(name, folder)
    try:
        return select_split(splits, split)
    except SplitError as exc:
        raise SuiteError(f"suite {name!r}: {exc}") from None


def load_splits(name: str, data_dir: Path | None = None) -> dict[str, list[Problem]]:
    """Every split of suite ``name``, cached per (name, data folder)."""
    if name.startswith(JSONL_PREFIX):
        from suites.jsonl_suite import load_jsonl

        path = name[len(JSONL_PREFIX) :]
        if not path:
            raise SuiteError("suite 'jsonl:' needs a path, e.g. 'jsonl:my_problems.jsonl'")
        from suites.mined import is_mined_suite, load_mined

        if is_mined_suite(path):  # `codeeval mine` output: tiers are splits
            return load_mined(path, suite=name)
        return {"test": load_jsonl(path, suite=name)}
    base, _, option = name.partition(OPTION_SEP)
    key = _ALIASES.get(base.lower(), base.lower())
    if key not in _REGISTRY:
        raise SuiteError(
            f"unknown suite {name!r}; known suites: {', '.join(known_suites())}, "
            "or jsonl:PATH for your own problems in HumanEval shape"
        )
    named = key + OPTION_SEP + option if option else key
    cache_key = (named, str(data_dir.resolve()) if data_dir else "")
    with _LOCK:
        cached = _CACHE.get(cache_key)
    if cached is None:
        cached = _as_splits(_call(_resolve(key), data_dir, option or None, name))
        with _LOCK:
            _CACHE[cache_key] = cached
    return {split: list(problems) for split, problems in cached.items()}


def _resolve(key: str) -> Loader:
    loader = _REGISTRY[key]
    if not isinstance(loader, str):
        return loader
    module_name, _, attr = loader.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise SuiteError(
            f"suite {key!r} is registered but its module {module_name!r} is not available: {exc}"
        ) from exc
    function = getattr(module, attr, None)
    if not callable(function):
        raise SuiteError(f"suite {key!r}: {module_name!r} has no loader function {attr!r}")
    return function


def _call(
    loader: Loader, data_dir: Path | None, option: str | None = None, name: str = ""
) -> Splits:
    try:
        parameters = inspect.signature(loader).parameters
        accepts_dir, accepts_option = "data_dir" in parameters, "option" in parameters
    except (TypeError, ValueError):
        accepts_dir, accepts_option = True, option is not None
    if option is not None and not accepts_option:
        raise SuiteError(f"suite {name!r}: this suite takes no {OPTION_SEP}OPTION")
    kwargs: dict[str, object] = {"option": option} if option is not None else {}
    # A loader builds a tree of fresh objects (EvalPlus: 124,000 cases), no cycles: the
    # collections its allocations would trigger only traverse it again (a fifth of the load).
    with paused_gc():
        return loader(data_dir=data_dir, **kwargs) if accepts_dir else loader(**kwargs)


def _as_splits(result: Splits) -> dict[str, list[Problem]]:
    if isinstance(result, Mapping):
        return {str(k): list(v) for k, v in result.items()}
    return {"test": list(result)}


def loader_module(name: str) -> str:
    """The module that loads the registered suite ``name`` (a ``jsonl:`` suite has none)."""
    base = name.partition(OPTION_SEP)[0]
    key = _ALIASES.get(base.lower(), base.lower())
    loader = _REGISTRY.get(key)
    if loader is None:
        known = ", ".join(known_suites())
        raise KeyError(f"unknown suite {name!r} (known: {known}, or jsonl:PATH)")
    return loader.split(":", 1)[0] if isinstance(loader, str) else loader.__module__
