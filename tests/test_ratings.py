import pytest

from modlens.ratings import HARD, NOT_TOXIC, TOXIC, derive_toxicity


@pytest.mark.parametrize("a1,a2,extreme,expected", [
    ("more", "more", NOT_TOXIC, TOXIC),
    ("less", "less", NOT_TOXIC, NOT_TOXIC),
    ("same", "more", NOT_TOXIC, HARD),
    ("more", "same", TOXIC, TOXIC),
    ("less", "less", TOXIC, NOT_TOXIC),
    ("same", "less", TOXIC, HARD),
])
def test_consistent_pairs(a1, a2, extreme, expected):
    d = derive_toxicity(a1, a2, extreme)
    assert (d.rating, d.inconsistent) == (expected, False)


def test_inconsistent_pairs_are_flagged():
    # less toxic than a non-toxic anchor yet more toxic than the "hard to say" one
    assert derive_toxicity("more", "less", NOT_TOXIC).inconsistent
    assert derive_toxicity("less", "more", TOXIC).inconsistent
    # exactly 5 consistent cells per anchor kind out of 9
    for extreme in (NOT_TOXIC, TOXIC):
        ok = [derive_toxicity(a, b, extreme) for a in ("more", "less", "same") for b in ("more", "less", "same")]
        assert sum(not d.inconsistent for d in ok) == 5


def test_two_candidate_cells_are_ambiguous():
    d = derive_toxicity("more", "less", TOXIC)
    assert d.ambiguous and set(d.candidates) == {HARD, TOXIC} and d.rating == HARD


def test_bad_answers_raise():
    with pytest.raises(ValueError):
        derive_toxicity("bigger", "more", TOXIC)
    with pytest.raises(ValueError):
        derive_toxicity("more", "more", HARD)
