"""The skip rule shared by the conftests of the vendored PyG tests: each
folder lists, per test name, (condition on a case's parameters, reason) and
the cases it names are skipped with that reason."""
from pathlib import Path
from typing import Callable, Dict, List, Tuple

import pytest

Table = Dict[str, List[Tuple[Callable[[dict], bool], str]]]


def param_is(name: str, value: str) -> Callable[[dict], bool]:
    """The case's parameter `name` prints as `value`."""
    return lambda params: str(params.get(name)) == value


def always(params: dict) -> bool:
    return True


def skip_out_of_scope(items, folder: Path, table: Table) -> None:
    """Marks the items of the test files directly in `folder` that `table`
    names as skipped, with the reason of the first condition they meet."""
    for item in items:
        if Path(item.path).resolve().parent != folder:
            continue
        params = getattr(getattr(item, 'callspec', None), 'params', {})
        for condition, reason in table.get(item.originalname, []):
            if condition(params):
                # First, so that its reason wins over PyG's own skipifs.
                item.add_marker(pytest.mark.skipif(True, reason=reason),
                                append=False)
                break
