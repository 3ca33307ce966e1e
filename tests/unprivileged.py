"""zymi-tui as an unprivileged user can run it, wherever the checkout lies.

A test that runs the CLI as `nobody` (to meet permission bits root ignores) needs a Python, the
package and its dependencies that `nobody` may read. The checkout and its venv may lie in a folder
only root can enter (a clone made in `tempfile.mkdtemp()`, mode 0700): then `python -m zymi_tui`
as `nobody` fails with "No module named zymi_tui". So the package and the venv's site-packages are
laid out again in a fresh folder any user may enter: each file hard-linked when any user may read it
already (no bytes copied, the same file system), else copied and made readable; folders 0755.
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import zymi_tui

PACKAGE = Path(zymi_tui.__file__).resolve().parent


def world_can_run(path: Path) -> bool:
    """Every folder on the way may be entered, and the file run, by any user."""
    real = path.resolve()
    return all(p.stat().st_mode & 0o001 for p in [real, *real.parents])


def interpreter_for_nobody() -> str:
    """This Python if any user may run it, else the system one of the same version (a venv made by
    pyenv under /root links to an interpreter other users cannot reach)."""
    if world_can_run(Path(sys.executable)):
        return sys.executable
    system = Path(f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}")
    assert system.exists() and world_can_run(system), "no Python an unprivileged user can run"
    return str(system)


def _site_packages() -> Path:
    return Path(next(p for p in sys.path if p.endswith("site-packages")))


def _lay_out(src: Path, dst: Path) -> None:
    """`src`'s tree again at `dst`, readable by any user (see the module docstring)."""
    for dirpath, _, filenames in os.walk(src):
        here = dst / Path(dirpath).relative_to(src)
        here.mkdir(parents=True, exist_ok=True)
        here.chmod(0o755)
        for name in filenames:
            source, target = Path(dirpath) / name, here / name
            if source.is_symlink():
                target.symlink_to(os.readlink(source))
                continue
            mode = source.stat().st_mode
            if mode & stat.S_IROTH:
                try:
                    os.link(source, target)
                    continue
                except OSError:  # another file system, or links refused
                    pass
            shutil.copy2(source, target)  # the modification time kept: the cached bytecode stays valid
            target.chmod(0o755 if mode & stat.S_IXUSR else 0o644)


@contextmanager
def readable_install() -> Iterator[str]:
    """A PYTHONPATH under which any user imports this zymi_tui and its dependencies; removed after."""
    root = Path(tempfile.mkdtemp(prefix="zymi-tui-for-nobody-"))
    try:
        root.chmod(0o755)
        _lay_out(PACKAGE, root / "pkg" / "zymi_tui")
        _lay_out(_site_packages(), root / "site")
        yield f"{root / 'pkg'}:{root / 'site'}"
    finally:
        shutil.rmtree(root)
