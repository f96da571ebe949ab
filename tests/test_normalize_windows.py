"""A long text's tokens go to the text steps in windows (`Normalizer.windows`), never all at once:
the result must be the one the whole token list gives, wherever the windows are cut."""
from __future__ import annotations

import pytest

from modlens.normalize import pipeline
from modlens.normalize.pipeline import build_normalizer
from modlens.normalize.steps._base import Span, Step

# spaced-out words, Title-case words whose cut depends on the token before, repairs, plain words
PIECES = ["you are s t u p i d. really", "ok. Sosickening", "so Idiotpeople", "st*pid m0r0n",
          "what a b i t c h", "Ihate women", "k i l l", "nice day", "a b c"]


def long_text(n_pieces: int) -> str:
    return " ".join(PIECES[i % len(PIECES)] for i in range(n_pieces))


@pytest.fixture(scope="module")
def normalizer():
    return build_normalizer()


@pytest.mark.parametrize("window", [1, 2, 3, 5, 7, 64])
def test_windows_give_the_whole_lists_result_wherever_they_are_cut(normalizer, monkeypatch, window):
    text = long_text(120)
    monkeypatch.setattr(pipeline, "WINDOW_SPANS", 10 ** 9)
    whole = normalizer.normalize(text)
    assert list(normalizer.windows(text)) == [[Span(*s) for s in spans(text)]]  # one window: as before
    monkeypatch.setattr(pipeline, "WINDOW_SPANS", window)
    assert len(list(normalizer.windows(text))) > 5  # really cut
    windowed = normalizer.normalize(text)
    assert windowed.text == whole.text and windowed.edits == whole.edits
    # the runs and the Title-case rule crossed windows and still did their work
    assert "stupid. really" in whole.text and "So sickening" in whole.text and "so Idiotpeople" in whole.text
    assert sum(e.step == "spaced_letters" for e in windowed.edits) >= 40  # 40 pieces hold a spaced-out word

def spans(text: str) -> list[tuple[int, int, str]]:
    return [(m.start(), m.end(), m.group()) for m in pipeline.TOKEN.finditer(text)]


def test_a_window_is_cut_only_after_a_token_no_text_step_joins(normalizer, monkeypatch):
    monkeypatch.setattr(pipeline, "WINDOW_SPANS", 4)
    text = "one two three four f i v e six seven eight nine ten"
    windows = list(normalizer.windows(text))
    assert [[s.text for s in w] for w in windows] == [
        ["one", "two", "three", "four"], ["f", "i", "v", "e", "six"], ["seven", "eight", "nine", "ten"]]
    # nothing but single letters: one window, whatever its length
    assert len(list(normalizer.windows(" ".join("abcdefghij")))) == 1


def test_a_text_step_that_does_not_say_what_it_joins_keeps_the_text_whole(monkeypatch):
    class Pairs(Step):  # a plug-in text step without may_join: it could join any two tokens
        name, kind = "pairs", "text"

        def merge(self, spans, lexicon):
            return spans

    n = build_normalizer(["unicode"])
    n.text_steps = [Pairs()]
    monkeypatch.setattr(pipeline, "WINDOW_SPANS", 2)
    assert len(list(n.windows("a b c d e f g"))) == 1
    n.text_steps = []  # no text step: every window is cut at its size
    assert [len(w) for w in n.windows("a b c d e f g")] == [2, 2, 2, 1]


def test_a_long_field_never_holds_all_its_tokens_at_once(normalizer):
    text = long_text(3000)  # ~15,000 tokens
    sizes = [len(w) for w in normalizer.windows(text)]
    assert sum(sizes) == len(spans(text)) and len(sizes) > 2
    assert max(sizes) < pipeline.WINDOW_SPANS + 16  # cut at the first token no step joins past the size
