"""The package's import arrows point down, read from the imports themselves.

Layers (low to high): version/environment/extension/files -> sparse -> ops ->
sampler/autotune/datasets -> nn/optim -> loader -> distributed -> bench/demo -> the package
root.
A module may import its own layer or a lower one, never a higher one; no
intra-package import hides inside a function (a lazy import is how a cycle
is papered over), and the module graph has no cycle.
"""
import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / 'pyg_fusesample'
RANK = {
    '_version': 0, 'environment': 0, '_extension': 0, 'files': 0,
    'sparse': 1,
    'ops': 2,
    'sampler': 3, 'autotune': 3, 'datasets': 3,
    'nn': 4, 'optim': 4,
    'loader': 5,
    'distributed': 6,
    'bench': 7, 'demo': 7,
    '__init__': 8,
}


def _modules():
    for path in sorted(PACKAGE.rglob('*.py')):
        parts = path.relative_to(PACKAGE).with_suffix('').parts
        yield path, ('pyg_fusesample',) + parts


def _targets(node, parts):
    """Absolute dotted names a (from-)import statement reads in the package."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.startswith('pyg_fusesample')]
    if node.level == 0:
        base = node.module or ''
        if not base.startswith('pyg_fusesample'):
            return []
    else:
        package = parts[:-1] if parts[-1] != '__init__' else parts[:-1]
        base = '.'.join(package[:len(package) - node.level + 1])
        if node.module:
            base = f'{base}.{node.module}' if base else node.module
    # 'from . import ops' imports the submodule 'ops'.
    return [f'{base}.{a.name}' if node.module is None else base
            for a in node.names]


def _unit(name):
    parts = name.split('.')
    return parts[1] if len(parts) > 1 else '__init__'


def _edges():
    for path, parts in _modules():
        tree = ast.parse(path.read_text(), str(path))
        top_level = set(id(n) for n in tree.body)
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in _targets(node, parts):
                    yield path, '.'.join(parts), target, id(node) in top_level


def test_every_unit_has_a_layer():
    units = {_unit(m) for _, parts in _modules() for m in ['.'.join(parts)]}
    assert units <= set(RANK), sorted(units - set(RANK))


def test_imports_point_down():
    wrong = []
    for path, module, target, _ in _edges():
        src, dst = _unit(module), _unit(target)
        if src != dst and RANK[dst] >= RANK[src]:
            wrong.append(f'{module} -> {target}')
    assert not wrong, 'imports pointing up or sideways:\n' + '\n'.join(wrong)


def test_no_lazy_imports_in_library_layers():
    lazy = [f'{module} -> {target}' for _, module, target, top in _edges()
            if not top and RANK[_unit(module)] < RANK['bench']]
    assert not lazy, 'function-level imports:\n' + '\n'.join(lazy)


def _module_of(target, known):
    while target and target not in known:
        target = target.rpartition('.')[0]
    return target


def test_no_import_cycle():
    known = {'.'.join(p[:-1] if p[-1] == '__init__' else p) for _, p in _modules()}
    graph = {m: set() for m in known}
    for _, module, target, _ in _edges():
        src = module[:-len('.__init__')] if module.endswith('.__init__') else module
        dst = _module_of(target, known)
        # A package's __init__ re-exports its children: child -> parent
        # edges through relative imports of siblings are not cycles.
        if dst and dst != src and not src.startswith(dst + '.'):
            graph[src].add(dst)
    state = {}

    def visit(m, stack):
        state[m] = 1
        for n in graph[m]:
            if state.get(n) == 1:
                pytest.fail('import cycle: ' + ' -> '.join(stack + [m, n]))
            if n not in state:
                visit(n, stack + [m])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [])
