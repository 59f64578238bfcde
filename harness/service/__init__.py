"""``codeeval serve``: the reward engine behind HTTP, for trainers in other processes.

Many clients' requests wait in a bounded queue (:mod:`harness.service.batcher`) and are
scored in batches on the engine's warm workers (:class:`harness.rewardapi.RewardEngine`);
the routes are in :mod:`harness.service.app`, the server and its command in
:mod:`harness.service.server`, and :mod:`harness.service.client` is a client with retries
(``from harness.service.client import RewardClient``).
docs/service.md describes the endpoints and the numbers measured here.
"""
