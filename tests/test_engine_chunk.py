"""`Engine.score_chunk` (an audit chunk's scores, built inline per call) gives the same answers as
`score_many` (the batcher's path, one `result` per text): a good answer, no answer (None) and an
answer without the toxicity label (an error row, which sends its whole call through `result`)."""
from __future__ import annotations

from typing import Sequence

from modlens.detectors.base import Detector
from modlens.engine import Engine

from daemon_helpers import study


class Mixed(Detector):
    """Answers by the text: "none" -> None, "odd" -> labels without `toxicity`, else a score."""
    name, version, labels, toxicity_label, max_batch = "mixed", "1", ("toxicity",), "toxicity", 2

    def score(self, texts: Sequence[str]) -> list[dict[str, float] | None]:
        return [None if t == "none" else {"other": 0.5} if t == "odd" else {"toxicity": len(t) / 10} for t in texts]


def comparable(results):
    return [(r.detector, r.name, r.version, r.labels, r.toxicity, r.error, r.details) for r in results]


async def test_score_chunk_answers_as_score_many_does():
    engine = Engine(study(), detectors={"m": Mixed()})
    try:
        # calls of two texts: [a, none] all good or missing, [odd, bb] with a bad answer, [ccc] alone
        texts = ["a", "none", "odd", "bb", "ccc"]
        chunk = (await engine.score_chunk({"m": texts}))["m"]
        many = await engine.runners["m"].score_many(texts)
        assert comparable(chunk) == comparable(many)
        assert [r.toxicity for r in chunk] == [0.1, None, None, 0.2, 0.3]
        assert chunk[1].error == "missing: detector has no score for this text"
        assert chunk[2].error is not None and chunk[2].error.startswith("bad answer: KeyError")
    finally:
        await engine.close()
