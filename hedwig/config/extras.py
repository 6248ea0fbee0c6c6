"""How to add one of hedwig's optional extras (spark, zk, tls, compression) to the
environment hedwig runs in, said once for every hint that names one.

The package index's `hedwig` is an unrelated project (a `hedwig[zk]` from there is
wrong): hedwig is installed from its source. From a checkout (`make run`'s editable
install) the hint is `make extras EXTRAS=zk`, which installs `-e '.[zk]'` into .venv and
keeps the install editable; an installed copy is told the packages the extra names.
"""

import sys
from importlib import metadata
from pathlib import Path

from hedwig.config.installed import CHECKOUT


def _extra_requirements(extra: str) -> list:
    """The requirements the installed distribution lists for `extra` ("kazoo>=2.10")."""
    try:
        requires = metadata.requires("hedwig") or []
    except metadata.PackageNotFoundError:
        return []
    marker = f'extra == "{extra}"'
    return [r.split(";", 1)[0].strip() for r in requires if marker in r.replace("'", '"')]


def install_hint(extra: str, checkout: Path | None = CHECKOUT) -> str:
    """The command that adds `extra` where this hedwig runs, as a hint says it."""
    if checkout is not None and (checkout / "setup.cfg").is_file():
        venv = checkout / ".venv"
        if Path(sys.prefix).resolve() == venv.resolve():
            return (
                f"make extras EXTRAS={extra} in {checkout} (or .venv/bin/pip install -e '.[{extra}]' there)"
            )
        return f"{sys.executable} -m pip install -e '{checkout}[{extra}]'"
    packages = _extra_requirements(extra)
    if packages:
        return "pip install " + " ".join(f"'{p}'" for p in packages) + f" (hedwig's {extra} extra)"
    return f"pip install '.[{extra}]' from hedwig's source directory"
