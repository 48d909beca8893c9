"""Targets: PyTorch module -> on-device file (litert.py: .tflite FP32/INT8)."""
