"""The live service: comments a page at a time, from a participant's browser, through the chunk
pipeline's steps (register items and gold labels, normalize, score what is missing,
`record_results`), with the live-variant worker, recovery after a crash, the study's calibration
items and item set. The daemon (`modlens.daemon`) is its transport: it reads frames, checks them
and calls this service; policy lives here and in `modlens.study`, never in the transport.

- `service.LiveService`: hello, comments, ratings, comment media, status;
- `variants.LiveVariants`: the budgeted worker that makes and scores a page's variants;
- `recovery`: what a killed daemon left undone (open sessions, unscored comments);
- `run.running`: the service with its resources (study-log writer, engine), started and stopped in order;
- `session.LiveSession`: a connection as the service sees it; `TokenBucket`, the one rate rule;
- `join.join_study`: a study pack joined from the extension's options page.
"""
from modlens.live.join import join_study
from modlens.live.run import LiveOptions, check_study, running
from modlens.live.service import LiveService
from modlens.live.session import LiveSession, TokenBucket

__all__ = ["LiveOptions", "LiveService", "LiveSession", "TokenBucket", "check_study", "join_study", "running"]
