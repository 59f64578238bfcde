"""Reward workers on Ray: a batch split by problem over actors, each a warm local evaluator.

    rows = evaluate(problems, samples, reward="weighted", executor="ray")
    rows = evaluate(problems, samples, executor="ray", address="ray://head:10001")

Each actor is one process that calls the local path (``evaluate(..., executor="local")``), so
its sandbox's fork server, reference timings and analyzer cache stay warm between batches,
exactly as in a single-process trainer. The rows come back in the batch's order with the
content the local path gives. An actor that dies (killed, out of memory, its node lost) turns
its share into ``error`` rows of kind ``infra`` (a trainer masks them) and is replaced before
the next batch; the other shares are unaffected. Errors the local path would raise (unknown
tasks, an unusable sandbox) are raised here too, with their own type.

Without ``address`` an already connected Ray is used, else ``ray.init()`` (which joins the
cluster in ``RAY_ADDRESS`` or starts a local one). Workers need codeeval-rl installed (the
same version: checked on every call) and, for a remote cluster, the suites' data where the
suites read files; they need none of the caller's files.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from harness.executors.shards import failed_rows, merge_rows, split_by_problem
from harness.records import Problem, Sample


def package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("codeeval-rl")
    except PackageNotFoundError:
        return "not installed"


class EvaluationActor:
    """The body of one Ray actor (wrapped by ``ray.remote`` when the executor starts)."""

    def evaluate(
        self,
        problems: list[Problem],
        samples: list[Sample],
        options: dict[str, Any],
        caller_version: str,
    ) -> list[dict[str, Any]]:
        mine = package_version()
        if mine != caller_version:
            raise RuntimeError(
                f"codeeval-rl {mine} on this Ray worker, {caller_version} on the caller: "
                "install the caller's version on every node of the cluster"
            )
        from harness.pipeline.run import evaluate_local

        return evaluate_local(problems, samples, **options)

    def pid(self) -> int:
        return os.getpid()


class RayExecutor:
    """A pool of :class:`EvaluationActor` (one CPU each), reused by every call.

    ``num_actors``: the pool's size (default: the cluster's CPUs when first used); a batch
    uses at most one actor per problem. ``actor_options``: extra ``.options(...)`` for each
    actor (e.g. ``{"resources": {"sandbox": 1}}`` to place them on CPU nodes).
    ``start_timeout_s``: how long a new actor may take to start before the call fails (an
    actor the cluster cannot place never starts).
    """

    def __init__(
        self,
        address: str | None = None,
        num_actors: int | None = None,
        actor_options: dict[str, Any] | None = None,
        start_timeout_s: float = 120.0,
    ) -> None:
        if num_actors is not None and num_actors < 1:
            raise ValueError(f"num_actors must be at least 1 (got {num_actors})")
        self.address = address
        self.num_actors = num_actors
        self.actor_options = {"num_cpus": 1, **(actor_options or {})}
        self.start_timeout_s = start_timeout_s
        self._actors: list[Any] = []
        self._started_ray = False
        self._remote: Any = None
        self.batches = 0  # batches scored on the actors (for metrics and tests)

    # ------------------------------------------------------------------ the pool

    def _ray(self) -> Any:
        try:
            import ray
        except ImportError as exc:
            raise RuntimeError(
                "executor='ray' needs Ray: pip install 'codeeval-rl[ray]' (or pip install ray)"
            ) from exc
        if not ray.is_initialized():
            # log_to_driver off: the actors' own logs would interleave with a trainer's output.
            ray.init(address=self.address, include_dashboard=False, log_to_driver=False)
            self._started_ray = True
        if self._remote is None:
            self._remote = ray.remote(EvaluationActor)
        return ray

    def size(self) -> int:
        """The pool's size: ``num_actors``, else the cluster's CPUs (at least 1)."""
        ray = self._ray()
        if self.num_actors is None:
            self.num_actors = max(1, int(ray.cluster_resources().get("CPU", 1)))
        return self.num_actors

    def _start(self, count: int) -> list[Any]:
        """The first ``count`` actors, started where missing (together, then waited for: an
        actor Ray cannot place would otherwise leave every later call waiting forever)."""
        ray = self._ray()
        self._actors += [None] * (count - len(self._actors))
        new = {}
        for index in range(count):
            if self._actors[index] is None:
                actor = self._remote.options(**self.actor_options).remote()
                self._actors[index] = actor
                new[index] = actor.pid.remote()
        if new:
            try:
                ray.get(list(new.values()), timeout=self.start_timeout_s)
            except (ray.exceptions.GetTimeoutError, ray.exceptions.RayActorError) as exc:
                for index in new:
                    self._replace(index)
                free = ray.available_resources().get("CPU", 0)
                raise RuntimeError(
                    f"{len(new)} Ray evaluation actor(s) did not start within "
                    f"{self.start_timeout_s:.0f} s ({type(exc).__name__}; {free:g} CPUs free in "
                    f"the cluster): each actor needs {self.actor_options.get('num_cpus')} CPU "
                    "and codeeval-rl installed on its node; use fewer actors (num_actors) or "
                    "free CPUs"
                ) from exc
        return self._actors[:count]

    def _replace(self, index: int) -> None:
        """Drop a dead actor; the next call starts a new one in its place."""
        ray = self._ray()
        actor, self._actors[index] = self._actors[index], None
        try:
            ray.kill(actor, no_restart=True)  # already dead, or wedged: make sure
        except Exception:  # noqa: BLE001 - a dead actor may refuse even this; it is gone
            pass

    def actor_pids(self) -> list[int]:
        """The process id of each live actor (starting the pool if needed)."""
        ray = self._ray()
        return ray.get([actor.pid.remote() for actor in self._start(self.size())])

    # ------------------------------------------------------------------ a batch

    def evaluate(
        self, problems: Sequence[Problem], samples: Sequence[Sample], **options: Any
    ) -> list[dict[str, Any]]:
        """``evaluate(problems, samples, **options)``'s rows, scored on the actors."""
        from harness.pipeline.prepare import load_reward, unique_ids
        from harness.pipeline.run import check_tasks

        if not samples:
            return []
        check_tasks(problems, samples)
        by_id = {p.task_id: p for p in problems}
        ray = self._ray()
        batch = unique_ids(samples)  # numbered here, so every share keeps the batch's ids
        # A reward named by a YAML path is read here: the workers may not have the file.
        options["reward"] = load_reward(options.get("reward"))
        out_dir = options.pop("out_dir", None)
        extras = options.pop("row_extras", None)  # per sample: split with the samples
        shares = split_by_problem(batch, self.size())
        version = package_version()
        actors = self._start(len(shares))
        calls = []
        for index, share in enumerate(shares):
            share_samples = [batch[i] for i in share]
            share_problems = [by_id[t] for t in dict.fromkeys(s.task_id for s in share_samples)]
            share_options = dict(options)
            if extras is not None:
                share_options["row_extras"] = [extras[i] for i in share]
            if out_dir is not None:  # one folder per share (on the actor's machine)
                share_options["out_dir"] = os.path.join(os.fspath(out_dir), f"share-{index}")
            ref = actors[index].evaluate.remote(
                share_problems, share_samples, share_options, version
            )
            calls.append((ref, share_samples, share_options.get("row_extras")))
        results = []
        for index, (ref, share_samples, share_extras) in enumerate(calls):
            try:
                rows = ray.get(ref)
            except ray.exceptions.RayActorError as exc:
                self._replace(index)
                rows = self._failed(by_id, share_samples, options["reward"], exc, share_extras)
            except ray.exceptions.RayTaskError as exc:
                raise exc.as_instanceof_cause() from None  # the local path's own error
            keys = [(r["task_id"], r["sample_id"]) for r in rows]
            if keys != [(s.task_id, s.sample_id) for s in share_samples]:
                raise RuntimeError(f"Ray actor {index} returned rows for other samples: {keys[:3]}")
            results.append(rows)
        self.batches += 1
        return merge_rows(shares, results, len(batch))

    @staticmethod
    def _failed(
        by_id: dict[str, Problem],
        samples: list[Sample],
        reward: Any,
        exc: BaseException,
        extras: Sequence[Mapping[str, Any]] | None = None,
    ) -> list[dict[str, Any]]:
        first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        rows = failed_rows(by_id, samples, f"Ray worker died: {first_line}")
        if extras is not None:  # as on the rows of a share that was scored
            from harness.pipeline.run import with_extras

            rows = with_extras(rows, samples, extras)
        if reward is None:
            return rows
        from harness.reward import score_rows

        return score_rows(rows, by_id, reward)  # reward None (masked), analyzers and feedback

    def close(self) -> None:
        """Kill the actors (and shut down the Ray instance this executor started)."""
        if self._remote is None:
            return
        import ray

        for index, actor in enumerate(self._actors):
            if actor is not None:
                self._replace(index)
        self._actors = []
        self._remote = None  # a later call may find another Ray session: wrap the class anew
        if self._started_ray and ray.is_initialized():
            ray.shutdown()
        self._started_ray = False
