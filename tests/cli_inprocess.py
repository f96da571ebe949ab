"""`modlens ARGS` run in this process (its `main`): a fresh interpreter per command cost a second or more of
imports. One command at a time: the environment and standard output belong to the process."""
from __future__ import annotations

import io
import os
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path


def run_modlens(args: list[str], home: Path | None = None) -> tuple[int, str, str]:
    """(exit code, standard output, standard error) of `modlens ARGS`, with MODLENS_HOME=`home` where given."""
    from modlens.cli import main

    out, err = io.StringIO(), io.StringIO()
    saved = os.environ.get("MODLENS_HOME")
    if home is not None:
        os.environ["MODLENS_HOME"] = str(home)
    try:
        with redirect_stdout(out), redirect_stderr(err):
            code = main(list(args))
    finally:
        if saved is None:
            os.environ.pop("MODLENS_HOME", None)
        else:
            os.environ["MODLENS_HOME"] = saved
    return code, out.getvalue(), err.getvalue()
