"""The pipes of one segment's judge (judge.py), made by the fork server before the zygote
forks the judge and the child.

Stdlib only; loaded by path by the fork server. Each of the three processes of a segment
keeps only its own ends: the judge writes frames to the server and talks to the child over the
object bridge (bridge.py); the child only answers the bridge; the server only reads frames.
"""

from __future__ import annotations

import os


class Judge:
    """The pipes of one segment's judge: frames to the server, the bridge to the child."""

    def __init__(self) -> None:
        self.nonce = os.urandom(8).hex()
        self.frames, self._frames_w = os.pipe()  # judge -> server
        self._to_child_r, self._to_child_w = os.pipe()  # judge -> child
        self._from_child_r, self._from_child_w = os.pipe()  # child -> judge
        self.child_fds = (self._to_child_r, self._from_child_w)

    def judge_fds(self) -> list[int]:
        """The judge's ends, in the order it places them on 3, 4 and 5 (judge.py)."""
        return [self._frames_w, self._to_child_w, self._from_child_r]

    def close_in_server(self) -> None:
        """After both forks: the server keeps only the read end of the judge's frames."""
        for fd in self._ends():
            os.close(fd)
        os.set_blocking(self.frames, False)

    def close(self) -> None:
        os.close(self.frames)

    def _ends(self) -> tuple[int, ...]:
        """Every end but the server's: the frames' write end and both bridge pipes."""
        return (
            self._frames_w,
            self._to_child_r,
            self._to_child_w,
            self._from_child_r,
            self._from_child_w,
        )
