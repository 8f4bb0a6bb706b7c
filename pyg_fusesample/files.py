"""Writing a file so that readers see the old one or the new one, never a
part of one: the autotune cache, GraphSAINT's norm file, the examples' graph
cache (a run killed while writing, or a second process reading, would
otherwise meet half a file)."""
import contextlib
import os
import tempfile
from typing import Iterator


@contextlib.contextmanager
def replaced_atomically(path: str) -> Iterator[str]:
    r"""Yields a temporary path beside :obj:`path` to write the new file
    to; when the block ends without an error it replaces :obj:`path`
    (``os.replace``, atomic on one file system), otherwise it is removed.

    .. code-block:: python

        with replaced_atomically(path) as tmp:
            torch.save(obj, tmp)
    """
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, suffix='.tmp',
                               prefix=f'.{os.path.basename(path)}.')
    os.close(fd)
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
