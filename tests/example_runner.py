"""Running the example scripts from the tests: in this interpreter (their
own ``__main__``; importing torch_geometric costs seconds per interpreter)
or, as a user starts them, in a subprocess; or loading one as a module."""
import importlib.util
import os
import runpy
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / 'examples'


def run_inprocess(script, args, capsys):
    """Runs a script's __main__ in this interpreter; (exit code, stdout,
    stderr)."""
    argv, path = sys.argv, list(sys.path)
    sys.argv = [str(script), *map(str, args)]
    sys.path.insert(0, str(EXAMPLES))
    code = 0
    try:
        runpy.run_path(str(script), run_name='__main__')
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    finally:
        sys.argv, sys.path[:] = argv, path
    out = capsys.readouterr()
    return code, out.out, out.err


def run_subprocess(script, args, timeout=120):
    # The repository on the path: the package may be built in place rather
    # than installed (as on the GPU machine), and a script's own folder is
    # what Python puts first.
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join(
        p for p in (str(REPO), env.get('PYTHONPATH')) if p)
    proc = subprocess.run([sys.executable, str(script), *map(str, args)],
                          cwd=REPO, capture_output=True, text=True,
                          timeout=timeout, env=env)
    return proc.returncode, proc.stdout, proc.stderr


def load_script(script):
    """A script (an example, a benchmark driver) as a module, its main()
    and helpers defined, nothing run; examples/ is on sys.path while it
    loads, as when it runs."""
    script = Path(script)
    sys.path.insert(0, str(EXAMPLES))
    try:
        spec = importlib.util.spec_from_file_location(script.stem, script)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(EXAMPLES))
    return module
