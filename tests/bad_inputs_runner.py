"""Runs malformed-input cases in child processes (``bad_inputs_child.py``)
and returns each case's outcome; a case that kills its process is reported
as a crash, and the cases after it run in a new process."""
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

HERE = Path(__file__).resolve().parent
CHILD = HERE / 'bad_inputs_child.py'


def run_cases(cases: Sequence[Tuple[str, str]], device: str,
              timeout: float = 120.0) -> Dict[str, dict]:
    r"""``{name: outcome}`` for every ``(name, code)`` of :obj:`cases`: the
    child's JSON result, or ``{'crash': ...}`` (the process died, or hung
    past :obj:`timeout` seconds in this case)."""
    out: Dict[str, dict] = {}
    todo: List[Tuple[str, str]] = list(cases)
    env = dict(os.environ)
    root = str(HERE.parent)
    env['PYTHONPATH'] = root + os.pathsep + env.get('PYTHONPATH', '')
    env.setdefault('OMP_NUM_THREADS', '1')
    while todo:
        with tempfile.NamedTemporaryFile('w', suffix='.json',
                                         delete=False) as f:
            json.dump({'device': device, 'cases': todo}, f)
            path = f.name
        try:
            proc = subprocess.run([sys.executable, str(CHILD), path],
                                  capture_output=True, text=True, env=env,
                                  timeout=timeout, cwd=root)
            stdout, rc, stderr = proc.stdout, proc.returncode, proc.stderr
        except subprocess.TimeoutExpired as e:
            stdout = e.stdout.decode() if isinstance(e.stdout, bytes) \
                else (e.stdout or '')
            rc, stderr = 'timeout', ''
        finally:
            os.unlink(path)
        started = None
        for line in stdout.splitlines():
            try:
                item = json.loads(line)
            except ValueError:
                continue
            if 'start' in item:
                started = item['start']
            elif 'name' in item:
                out[item['name']] = item
                started = None
        done = {name for name, _ in todo if name in out}
        if started is not None:  # died (or hung) inside this case
            out[started] = {'name': started, 'crash': rc,
                            'stderr': stderr[-3000:]}
            done.add(started)
        elif rc != 0 and not done:
            # Died before the first case (import error, ...): report all.
            for name, _ in todo:
                if name not in out:
                    out[name] = {'name': name, 'crash': rc,
                                 'stderr': stderr[-3000:]}
            break
        todo = [(n, c) for n, c in todo if n not in done]
    return out
