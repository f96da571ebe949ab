"""Multi-participant studies (docs/MULTI.md): the researcher's study folder (`folder.py`), the one
file participants open (`pack.py`), joining a study on a participant's machine (`join.py`).
The participant's bundle and the researcher's merge are in `modlens.exchange` (`bundle.py`,
`merge.py`).

`load(path)` is the one way to read a study, a study.toml or a folder, for every command and the
daemon (`folder.py`)."""
from modlens.study.folder import load

__all__ = ["load"]
