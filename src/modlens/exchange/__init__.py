"""Studies as files people exchange: the participant's bundle (`bundle.py`), the researcher's merge
(`merge.py`) and what a bundle must not carry out of the participant's computer (`scrub.py`).

They sit above the study log's storage (`modlens.studylog`), which they read and write through its
records; which rows of each table leave, how merge finds them again and which columns are scrubbed
is declared once, per table, in `studylog/tables.py`.
"""
