"""The value channel between the candidate's process and the trusted side (stdlib only).

:mod:`codec` is its one entry. The fork server loads these files by path (they are bound into
bubblewrap's view beside ``inside/``); the trusted side imports them as this package.
"""
