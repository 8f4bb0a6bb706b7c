"""Counting the host reads a piece of Python makes, on any device.

On a GPU each read of a tensor's values into Python (``tolist``, ``item``,
``nonzero``, ``int()``, ``bool()``, a boolean mask's indexing) waits for the
device: a synchronisation. On the CPU they cost nothing, so the tests count
them instead, by the calls themselves: a ``TorchFunctionMode`` sees every
tensor call and counts the reads made directly by the given module's code
(optionally only from the named functions of it), not those of torch or of
the C++ ops, which count their own.
"""
import os
import traceback
from typing import Iterable, Optional

import torch
from torch.overrides import TorchFunctionMode

READS = {'tolist', 'item', 'nonzero', '__int__', '__bool__', '__float__',
         '__index__', 'numpy'}


class HostReads(TorchFunctionMode):
    def __init__(self, module: str, functions: Optional[Iterable[str]] = None):
        super().__init__()
        self.module = module
        self.functions = None if functions is None else set(functions)
        self.count = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, '__name__', '')
        if name in READS or (
                name in ('__getitem__', '__setitem__') and len(args) > 1
                and isinstance(args[1], torch.Tensor)
                and args[1].dtype == torch.bool):
            caller = traceback.extract_stack(limit=2)[0]
            self.count += (os.path.samefile(caller.filename, self.module) and
                           (self.functions is None or
                            caller.name in self.functions))
        return func(*args, **(kwargs or {}))
