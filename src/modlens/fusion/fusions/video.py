"""The paper's four video fusions (DUO section 3.3.2, Table 4), A shown or spoken first, then B:

- V+T: A's picture, then a card of "are B"; or a card of "A are", then B's picture;
- V+A: A's picture, then "are B" spoken over a blank screen; or "A are" spoken over a blank
  screen, then B's picture (shown only when the speech has finished);
- A+T: one keyword spoken, the other on a card; the middle word joins, by a seeded choice,
  either the speech or the card;
- V+A+T: as V+A, with the middle word on a card between A and B.

Which keyword is the picture is a seeded choice among those that have one (folder image or
emoji); a seed with no picture for either skips the V fusions. The parts, each half alone in its
own modality: a picture as a PNG, speech as a WAV, a card's words as text."""
from __future__ import annotations

import random
from typing import Any

from modlens.fusion.case import FusedCase
from modlens.fusion.fusions.base import FusionContext, Picture, Skip, case, check_text_font, picture, png
from modlens.fusion.seeds import Seed
from modlens.media import MediaBlob, MediaInput

NAMES = ("V+T", "V+A", "A+T", "V+A+T")
DESCRIPTIONS = {
    "V+T": "video: A's picture then a card of \"are B\" (or a card of \"A are\" then B's picture)",
    "V+A": "video: A's picture then \"are B\" spoken (or \"A are\" spoken then B's picture)",
    "A+T": "video: one keyword spoken, the other on a card, the middle word in either",
    "V+A+T": "video: picture, a card of the middle word, speech (A first, B last)",
}


def check(name: str) -> None:
    from modlens.fusion.render.avtools import program_path

    check_text_font()
    program_path("ffmpeg")
    if "A" in name.split("+"):
        program_path("espeak-ng")


class _Speech:
    """Speech clips of one case, with the parameters of each."""

    def __init__(self, ctx: FusionContext) -> None:
        self.ctx = ctx
        self.params: list[dict[str, Any]] = []

    def say(self, text: str, role: str) -> MediaBlob:
        from modlens.fusion.render.speech import speech_params, synthesize

        c = self.ctx
        self.params.append({"text": text, "role": role, **speech_params(voice=c.voice, speed_wpm=c.speed_wpm,
                                                                           pitch=c.pitch, seed=c.run_seed)})
        return synthesize(text, voice=c.voice, speed_wpm=c.speed_wpm, pitch=c.pitch, seed=c.run_seed)


def _pictured(seed: Seed, ctx: FusionContext, rng: random.Random) -> tuple[str, Picture]:
    """("A" or "B", its picture): a seeded choice among the keywords that have one."""
    found = {role: p for role, p in (("A", picture(seed.a, ctx, rng)), ("B", picture(seed.b, ctx, rng)))
             if p is not None}
    if not found:
        raise Skip(f"no picture for {seed.a!r} or {seed.b!r} (no --images label, no emoji)")
    role = rng.choice(sorted(found))
    return role, found[role]


def build(name: str, seed: Seed, ctx: FusionContext, rng: random.Random) -> FusedCase:
    from modlens.fusion.render.video import AudioSegment, ImageSegment, Segment, make_video, text_card_segment, video_params

    speech = _Speech(ctx)
    shown: list[dict[str, str]] = []  # what each segment shows or says, in order

    def card(text: str, role: str) -> Segment:
        shown.append({"role": role, "card": text})
        return text_card_segment(text, size=ctx.size, role=role)

    def said(text: str, role: str) -> tuple[Segment, MediaBlob]:
        shown.append({"role": role, "speech": text})
        clip = speech.say(text, role)
        return AudioSegment(clip, None, role), clip

    def still(pic: Picture, role: str) -> Segment:
        shown.append({"role": role, "picture": str(pic.source.get("keyword", ""))})
        return ImageSegment(pic.image, role=role)

    segments: list[Segment]
    layout: dict[str, Any]
    if name == "A+T":
        spoken = rng.choice(["A", "B"])
        middle_in = rng.choice(["audio", "text"])
        # the middle word joins the half that is spoken or the half on the card
        a_text = seed.left if (middle_in == "audio") == (spoken == "A") else seed.a
        b_text = seed.right if a_text == seed.a else seed.b
        if spoken == "A":
            (voice, clip), shown_b = said(a_text, "A"), card(b_text, "B")
            segments, part_a, part_b = [voice, shown_b], MediaInput("", (clip,)), MediaInput(b_text)
        else:
            shown_a, (voice, clip) = card(a_text, "A"), said(b_text, "B")
            segments, part_a, part_b = [shown_a, voice], MediaInput(a_text), MediaInput("", (clip,))
        layout = {"spoken": spoken, "middle_in": middle_in}
    else:
        role, pic = _pictured(seed, ctx, rng)
        alone = MediaInput("", (png(pic.image),))
        layout = {"picture": role, "picture_source": pic.source}
        if name == "V+T" and role == "A":
            segments, part_a, part_b = [still(pic, "A"), card(seed.right, "B")], alone, MediaInput(seed.right)
        elif name == "V+T":
            segments, part_a, part_b = [card(seed.left, "A"), still(pic, "B")], MediaInput(seed.left), alone
        elif name == "V+A" and role == "A":
            first = still(pic, "A")
            voice, clip = said(seed.right, "B")
            segments, part_a, part_b = [first, voice], alone, MediaInput("", (clip,))
        elif name == "V+A":
            voice, clip = said(seed.left, "A")
            segments, part_a, part_b = [voice, still(pic, "B")], MediaInput("", (clip,)), alone
        elif name == "V+A+T" and role == "A":
            first, middle = still(pic, "A"), card(seed.middle, "middle")
            voice, clip = said(seed.b, "B")
            segments, part_a, part_b = [first, middle, voice], alone, MediaInput("", (clip,))
        elif name == "V+A+T":
            voice, clip = said(seed.a, "A")
            segments = [voice, card(seed.middle, "middle"), still(pic, "B")]
            part_a, part_b = MediaInput("", (clip,)), alone
        else:
            raise KeyError(f"video.py builds {', '.join(NAMES)}, not {name!r}")
    video = make_video(segments, size=ctx.size)
    return case(seed, name, ctx, caption="", media=(video,), part_a=part_a, part_b=part_b,
                params={**layout, "shown": shown, "video": video_params(segments, size=ctx.size),
                        "speech": speech.params})
