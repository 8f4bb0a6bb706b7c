"""What every benchmark row records about where it ran."""
import platform

import torch


def device_name(device: torch.device) -> str:
    if device.type == 'cuda':
        return torch.cuda.get_device_name(device)
    cpu = platform.processor() or platform.machine()
    return f'cpu ({torch.get_num_threads()} threads, {cpu})'


def versions() -> dict:
    return {'torch': torch.__version__, 'cuda': torch.version.cuda or ''}
