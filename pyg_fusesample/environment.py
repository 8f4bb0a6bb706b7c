"""Where code runs: the device's name and the software versions.

Recorded in every benchmark row (``bench``) and in the autotune cache's key
(``autotune``, with ``_version``), so it sits below both.
"""
import platform

import torch


def device_name(device: torch.device) -> str:
    if device.type == 'cuda':
        return torch.cuda.get_device_name(device)
    cpu = platform.processor() or platform.machine()
    return f'cpu ({torch.get_num_threads()} threads, {cpu})'


def versions() -> dict:
    """torch and CUDA versions (the columns of a benchmark row)."""
    return {'torch': torch.__version__, 'cuda': torch.version.cuda or ''}
