"""The bundled configurations, shipped as package data so that a wheel installed anywhere
finds them as the checkout does: the model registry (``models/``), the reward presets
(``rewards/``), the trainers' configs and the coder's evaluation configs.

Read them through :func:`harness.paths.bundled`; a user's own config is a path.
"""
