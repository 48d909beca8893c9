"""Verification: parity against PyTorch (``validate``, ``parity``), latency (``bench``), and their reports."""
