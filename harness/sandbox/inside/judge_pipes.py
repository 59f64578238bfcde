"""The pipes of one segment's judge (judge.py), made by the fork server before it forks.

Stdlib only; loaded by path by the fork server. Each of the three processes of a segment
keeps only its own ends: the judge writes frames to the server and talks to the child over the
object bridge (bridge.py); the child only answers the bridge; the server only reads frames.
"""

from __future__ import annotations

import fcntl
import os


class Judge:
    """The pipes of one segment's judge: frames to the server, the bridge to the child."""

    def __init__(self) -> None:
        self.nonce = os.urandom(8).hex()
        self.pid = 0
        self.frames, self._frames_w = os.pipe()  # judge -> server
        self._to_child_r, self._to_child_w = os.pipe()  # judge -> child
        self._from_child_r, self._from_child_w = os.pipe()  # child -> judge
        self.child_fds = (self._to_child_r, self._from_child_w)

    def place_in_judge(self) -> None:
        """In the forked judge: its three ends on fds 3, 4 and 5, nothing else of them."""
        mine = (self._frames_w, self._to_child_w, self._from_child_r)
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 16) for fd in mine]
        for fd in (self.frames, *self._ends()):
            os.close(fd)
        for target, fd in enumerate(high, start=3):
            os.dup2(fd, target)
            os.close(fd)

    def close_in_child(self) -> None:
        """In the candidate's child: only its two bridge ends stay (child.run moves them)."""
        for fd in (self.frames, self._frames_w, self._to_child_w, self._from_child_r):
            os.close(fd)

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
