"""Multi-participant studies (docs/MULTI.md): the researcher's study folder (`folder.py`), the one
file participants open (`pack.py`), joining a study on a participant's machine (`join.py`).
The participant's bundle and the researcher's merge are study-log formats: `studylog/bundle.py`
and `studylog/merge.py`."""
