"""librados's Python binding (`rados`), found or explained in one line.

Debian's `python3-rados` (Ceph 16.2) builds the binding for its own CPython 3.11 only, as
/usr/lib/python3/dist-packages/rados.cpython-311-<arch>.so: a virtualenv made from another
Python 3.11 (pyenv's, say) can load it, but does not see it. `python -m
hedwig.ledger.rados_binding --link` (run by the Makefile) links it into the running
environment's site-packages; a hub configured with `[ledger] store = rados` where the
binding cannot be imported stops with RadosMissing, one line saying what to install.
"""

import argparse
import glob
import os
import sys
import sysconfig

DIST_PACKAGES = os.environ.get("HEDWIG_RADOS_DIST_PACKAGES", "/usr/lib/python3/dist-packages")


class RadosMissing(RuntimeError):
    """The `rados` module cannot be imported here: the message says what to do."""


def import_rados():
    """The `rados` module, or RadosMissing naming what to install or link."""
    try:
        import rados
    except ImportError as e:
        tag = sys.implementation.cache_tag
        raise RadosMissing(
            f"[ledger] store = rados needs librados's Python module, which {sys.executable} cannot"
            f" import ({e}): install Debian's python3-rados and ceph-common, then run `make"
            f" .venv/.rados-link` (a link to its {tag} build; docs/operations.md, 'RADOS')"
        ) from None
    return rados


def binding_path() -> str | None:
    """The system's build of the binding for this interpreter's ABI, if installed."""
    tag = sys.implementation.cache_tag  # cpython-311
    found = sorted(glob.glob(os.path.join(DIST_PACKAGES, f"rados.{tag}-*.so")))
    return found[0] if found else None


def link() -> str:
    """Link the system's binding into this environment's site-packages (once); what was
    done, as a line for the user."""
    target = os.path.join(sysconfig.get_paths()["purelib"], "rados.so")
    try:
        import rados  # noqa: F401 - importable already (a system Python, or linked before)

        return "the rados module is importable already"
    except ImportError:
        pass
    source = binding_path()
    if source is None:
        return (
            f"no rados module for {sys.implementation.cache_tag} under {DIST_PACKAGES}: [ledger] store"
            " = rados will not be available (install python3-rados with a CPython 3.11 venv)"
        )
    if os.path.lexists(target):
        os.unlink(target)
    os.symlink(source, target)
    return f"linked {target} -> {source}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hedwig.ledger.rados_binding", description=__doc__)
    parser.add_argument("--link", action="store_true", help="link the system's rados module into this venv")
    args = parser.parse_args(argv)
    if args.link:
        print(link())
        return 0
    try:
        rados = import_rados()
    except RadosMissing as e:
        print(e, file=sys.stderr)
        return 1
    print(rados.__file__)
    return 0


if __name__ == "__main__":
    sys.exit(main())
