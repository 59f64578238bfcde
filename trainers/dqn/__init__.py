"""Token-level Q-learning for language models (``python -m trainers.dqn``): twin Q heads on a
frozen policy's hidden states, double-Q targets from harness rewards, a conservative penalty,
and decoding that shifts the policy's logits by the learned advantages."""
