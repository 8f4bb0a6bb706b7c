"""Values kept per tensor object: what a graph builder computed from an
``edge_index`` (its CSC, its layout), found again without redoing it.

Keyed by identity (tensors compare elementwise, so a ``WeakKeyDictionary``
cannot hold them): an entry is dropped by a finaliser when its tensor is
collected, so a recycled id never sees a stale value, and is missed once the
tensor is modified in place (its version counter moved on). A value must not
hold a view of its own key: the view would keep the key alive, and the
entry with it.
"""
import weakref
from typing import Any, Callable, Dict, Optional

from torch import Tensor


class TensorMemo:
    r"""``{tensor: value}`` for live, unmodified tensors (see the module)."""
    def __init__(self):
        self._items: Dict[int, tuple] = {}

    def __len__(self) -> int:
        return len(self._items)

    def get(self, t: Tensor) -> Optional[Any]:
        item = self._items.get(id(t))
        if item is not None and item[0]() is t and item[1] == t._version:
            return item[2]
        return None

    def put(self, t: Tensor, value: Any) -> Any:
        key = id(t)
        stale = self._items.get(key)
        self._items[key] = (weakref.ref(t), t._version, value)
        if stale is None or stale[0]() is not t:  # one finaliser per tensor
            weakref.finalize(t, self._items.pop, key, None)
        return value

    def setdefault(self, t: Tensor, make: Callable[[], Any]) -> Any:
        value = self.get(t)
        return self.put(t, make()) if value is None else value
