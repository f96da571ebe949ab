"""Each fusion type on its own: the case's caption, media and parts match its contract, its
params are complete, and generation is deterministic (same seed -> same case keys)."""
from __future__ import annotations

import hashlib
import io

import pytest
from PIL import Image, ImageDraw

from modlens.fusion import fusions
from modlens.fusion.emoji import load_emoji_table
from modlens.fusion.fusions.base import FusionContext
from modlens.fusion.generate import generate
from modlens.fusion.keywords import KeywordPair
from modlens.fusion.seeds import make_seeds, seed_rng
from modlens.fusion.templates import load_templates
from realtools import requires

PAIRS = [KeywordPair("abuse_hate", "women", "pigs"), KeywordPair("spam", "Tobacco", "Tel: 555-0142"),
         KeywordPair("sexual", "lick", "dick")]
VIDEO = ("V+T", "V+A", "A+T", "V+A+T")
needs_av = requires("ffmpeg", "ffprobe", "espeak-ng")


@pytest.fixture(scope="module")
def seeds():
    return {s.a: s for s in make_seeds(PAIRS, load_templates(), 0)}


@pytest.fixture(scope="module")
def ctx():
    return FusionContext(load_emoji_table(), run_seed=0)


def build(name, seed, ctx):
    return fusions.build(name, seed, ctx, seed_rng(ctx.run_seed, name, seed.template, seed.text))


def png_pixels(blob):
    with Image.open(io.BytesIO(blob.data)) as im:
        return im.convert("RGB").tobytes(), im.size


def test_text_emoji(seeds, ctx):
    case = build("T+E", seeds["women"], ctx)
    assert case.caption == "women are 🐷" and case.media == ()
    assert (case.part_a.text, case.part_b.text) == ("women are", "🐷")
    assert case.params["code_points"] == ["U+1F437"] and case.params["replaced"] == "B"
    assert case.seed_text == "women are pigs" and case.modalities == ("text",)
    with pytest.raises(fusions.Skip, match="no emoji"):
        build("T+E", seeds["Tobacco"], ctx)


def test_text_image_with_emoji_picture_and_with_text_card(seeds, ctx):
    case = build("T+I", seeds["women"], ctx)
    assert case.caption == "women are" and len(case.media) == 1 and case.media[0].mime == "image/png"
    assert case.part_a.text == "women are" and case.part_a.media == ()
    assert case.part_b.text == "" and case.part_b.media == case.media
    assert case.params["image_b"]["kind"] == "emoji" and case.params["image_b"]["emoji"] == "🐷"
    assert case.modalities == ("text", "image")
    spam = build("T+I", seeds["Tobacco"], ctx)  # no picture for a phone number: B on a card
    assert spam.caption == "Tobacco:" and spam.params["image_b"] == {
        "kind": "text_card", "text": "Tel: 555-0142", "size": [480, 360], "font": spam.params["image_b"]["font"]}


@requires("tesseract")
def test_text_image_card_reads_back_with_ocr(seeds, ctx):
    from modlens.media.ocr import read_text
    spam = build("T+I", seeds["Tobacco"], ctx)
    ocr = read_text(spam.media[0], psm=6)
    assert "555-0142" in ocr.text


def test_image_text_places_the_rest_of_the_sentence_in_a_folder_image(tmp_path, seeds, ctx):
    label = tmp_path / "images" / "women"
    label.mkdir(parents=True)
    picture = Image.new("RGB", (480, 360), "white")
    ImageDraw.Draw(picture).ellipse((150, 90, 330, 270), fill=(200, 40, 40))  # the salient object, centred
    picture.save(label / "one.png")
    folder_ctx = FusionContext(ctx.emoji_table, tmp_path / "images", run_seed=0)
    case = build("I+T", seeds["women"], folder_ctx)
    assert case.caption == "" and len(case.media) == 1
    params = case.params
    assert params["text"] == "are pigs"
    assert params["image_a"]["kind"] == "folder" and params["image_a"]["file"] == "women/one.png"
    assert params["image_a"]["sha256"] == hashlib.sha256((label / "one.png").read_bytes()).hexdigest()
    placement = params["placement"]
    assert placement["overlap"] <= 0.30 and placement["position"] in placement["candidates"]
    assert placement["text_role"] == "B" and placement["stroke_width"] >= 1
    # part A is the picture alone (the same pixels as the folder image), part B a card of "are pigs"
    assert png_pixels(case.part_a.media[0]) == (picture.tobytes(), (480, 360))
    assert params["part_b"]["text"] == "are pigs" and case.part_b.text == ""
    assert case.media[0].sha256 != case.part_a.media[0].sha256  # the words were drawn in
    with pytest.raises(fusions.Skip, match="no picture for A"):
        build("I+T", seeds["Tobacco"], ctx)


@requires("tesseract")
def test_image_text_without_images_draws_the_first_half_before_b_s_emoji(seeds, ctx):
    """No --images folder and no picture for the group "women": the paper's other order, "women
    are" written before B's picture (the pig emoji), so I+T runs out of the box."""
    case = build("I+T", seeds["women"], ctx)
    params = case.params
    assert case.caption == "" and len(case.media) == 1
    assert params["picture"] == "B" and params["text"] == "women are"
    assert params["image_b"]["kind"] == "emoji" and params["image_b"]["emoji"] == "🐷"
    placement = params["placement"]
    assert placement["text_role"] == "A" and placement["position"] in placement["candidates"]
    assert placement["overlap"] <= 0.30
    # part A: a card of the written words; part B: the picture alone, without them
    assert params["text_card"]["text"] == "women are" and case.part_a.text == "" and case.part_b.text == ""
    assert case.part_a.media[0].sha256 != case.part_b.media[0].sha256 != case.media[0].sha256
    pixels, size = png_pixels(case.media[0])
    assert size == (480, 360) and pixels != png_pixels(case.part_b.media[0])[0]  # the words were drawn in
    from modlens.media.ocr import read_text
    read = read_text(case.media[0])
    assert "women" in read.text.lower().split()


def test_image_only(seeds, ctx):
    case = build("I", seeds["lick"], ctx)
    assert case.caption == "" and len(case.media) == 1
    assert case.params["card"]["text"] == seeds["lick"].text
    assert case.params["part_a"]["text"] == seeds["lick"].left and case.params["part_b"]["text"] == "dick"
    assert len({case.media[0].sha256, case.part_a.media[0].sha256, case.part_b.media[0].sha256}) == 3


@needs_av
@pytest.mark.parametrize("name", VIDEO)
def test_video_fusions_have_expected_streams_and_duration(name, seeds, ctx):
    from modlens.fusion.render.avtools import probe

    case = build(name, seeds["women"], ctx)
    assert case.caption == "" and [m.mime for m in case.media] == ["video/mp4"]
    info = probe(case.media[0])
    streams = sorted(s["type"] for s in info["streams"])
    assert streams == (["audio", "video"] if "A" in name.split("+") else ["video"])
    assert info["duration_s"] == pytest.approx(case.params["video"]["duration_s"], abs=0.15)
    shown = case.params["shown"]
    assert [s["role"] for s in shown] == case.params["video"]["order"]
    assert shown[0]["role"] == "A" and shown[-1]["role"] == "B"  # A first, then B (section 3.3.2)
    if name == "V+A+T":
        assert shown[1] == {"role": "middle", "card": "are"}
    kinds = {m.kind for p in (case.part_a, case.part_b) for m in p.media}
    texts = [p.text for p in (case.part_a, case.part_b) if p.text]
    if name == "V+T":
        assert kinds == {"image"} and len(texts) == 1
    elif name in ("V+A", "V+A+T"):
        assert kinds == {"image", "audio"} and texts == []
    else:  # A+T: one half spoken, the other as text
        assert kinds == {"audio"} and len(texts) == 1
        assert case.params["middle_in"] in ("audio", "text")
    for clip in case.params["speech"]:
        assert clip["engine"] == "espeak-ng" and clip["engine_version"]
        assert (clip["voice"], clip["speed_wpm"]) == ("en-us+klatt4", 130)  # the measured default
    assert case.params["video"]["encoder"]["version"]


def test_generation_is_deterministic_and_reports_skips(seeds, ctx):
    names = ["T+E", "T+I", "I+T", "I"]
    one = generate(list(seeds.values()), names, ctx)
    two = generate(list(seeds.values()), names, ctx)
    assert [c.key for c in one.cases] == [c.key for c in two.cases]
    assert len(one.cases) + len(one.skipped) == len(names) * len(seeds)
    # Tobacco and its phone number have no emoji and no picture; "women are pigs" takes I+T from
    # B's picture (the pig emoji), so only the spam seed is skipped, once per fusion, with its reason
    tobacco = seeds["Tobacco"].text
    assert sorted((s["fusion"], s["seed"]) for s in one.skipped) == [("I+T", tobacco), ("T+E", tobacco)]
    assert all(s["reason"] for s in one.skipped)
    assert "no picture for A 'Tobacco' or B 'Tel: 555-0142'" in next(s["reason"] for s in one.skipped
                                                                      if s["fusion"] == "I+T")
    # a case does not depend on which other seeds the run has
    alone = generate([seeds["lick"]], names, ctx)
    assert {c.key for c in alone.cases} <= {c.key for c in one.cases}


@needs_av
def test_video_generation_is_deterministic(seeds, ctx):
    one = generate([seeds["lick"]], ["V+A"], ctx)
    two = generate([seeds["lick"]], ["V+A"], ctx)
    assert one.cases and [c.key for c in one.cases] == [c.key for c in two.cases]
    assert one.cases[0].media[0].sha256 == two.cases[0].media[0].sha256


def test_fusion_without_its_program_is_reported_unavailable(seeds, ctx, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    result = generate([seeds["women"]], ["T+E", "V+A"], ctx)
    assert [c.fusion for c in result.cases] == ["T+E"]
    assert "V+A" in result.unavailable and "apt-get install" in result.unavailable["V+A"]["fix"]
