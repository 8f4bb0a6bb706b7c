"""Where code runs: the device's name, the host's CPU and the software
versions.

Recorded in every benchmark row (``bench``) and in the autotune cache's key
(``autotune``, with ``_version``), so it sits below both.
"""
import os
import platform

import torch


def concrete_device(device) -> torch.device:
    """:obj:`device` with its index (``'cuda'`` -> ``'cuda:0'`` when GPU 0
    is current), as a tensor's device has one: so that devices compare
    equal where they are the same."""
    device = torch.device(device)
    if device.type == 'cuda' and device.index is None:
        return torch.device('cuda', torch.cuda.current_device())
    return device


def device_name(device: torch.device) -> str:
    if device.type == 'cuda':
        return torch.cuda.get_device_name(device)
    cpu = platform.processor() or platform.machine()
    return f'cpu ({torch.get_num_threads()} threads, {cpu})'


def versions() -> dict:
    """torch and CUDA versions (the columns of a benchmark row)."""
    return {'torch': torch.__version__, 'cuda': torch.version.cuda or ''}


def host_cpu() -> str:
    """The host's CPU model and the cores this process may use (``'AMD EPYC
    9654 96-Core Processor, 16 cores'``): a benchmark row's baseline that
    is host-bound (PyG's eager steps) moves with it."""
    model = ''
    try:
        with open('/proc/cpuinfo') as f:
            model = next((line.split(':', 1)[1].strip() for line in f
                          if line.startswith('model name')), '')
    except OSError:
        pass
    model = model or platform.processor() or platform.machine()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') \
        else os.cpu_count()
    return f'{model}, {cores} cores'
