"""Image rendering for fused cases (docs/FUSION.md "Rendering"): real Pillow drawing with the
installed fonts, read back with the real Tesseract; placements checked against the paper's rules
recomputed here from the boxes."""
from __future__ import annotations

import io
import random
import re

import numpy as np
import pytest
from PIL import Image, ImageDraw, PngImagePlugin

from modlens.fusion.emoji import EmojiTableError, emoji_for, load_emoji_table, word_forms
from modlens.fusion.render import FusionUnavailable, to_png_blob
from modlens.fusion.render import fonts
from modlens.fusion.render.text_image import (
    MAX_OVERLAP, POSITIONS, candidate_positions, draw_text, place_text, render_text_card,
)
from realtools import need

SIZE = (480, 360)
CENTRED = (180, 130, 300, 230)  # a salient object in the middle of a 480 x 360 picture


@pytest.fixture
def text_font() -> None:
    need("text-font")


@pytest.fixture
def emoji_font() -> None:
    need("emoji-font")


@pytest.fixture
def tesseract() -> None:
    need("tesseract")


def ocr_words(image: Image.Image) -> list[str]:
    from modlens.media.ocr import read_text

    return words(read_text(to_png_blob(image)).text)


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


# --- the paper's rules, recomputed from the boxes -------------------------------------------

def share_on(box, salient) -> float:
    """The share of box's area lying on salient."""
    w = max(0, min(box[2], salient[2]) - max(box[0], salient[0]))
    h = max(0, min(box[3], salient[3]) - max(box[1], salient[1]))
    return w * h / ((box[2] - box[0]) * (box[3] - box[1]))


def in_reading_order(box, salient, role: str) -> bool:
    """A before the object (above or left of it, never below or right); B after it."""
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    left, above = cx < salient[0], cy < salient[1]
    right, below = cx > salient[2], cy > salient[3]
    if role == "A":
        return (left or above) and not (right or below)
    return (right or below) and not (left or above)


def changed_box(before: Image.Image, after: Image.Image):
    from PIL import ImageChops

    return ImageChops.difference(before.convert("RGB"), after.convert("RGB")).getbbox()


# --- text drawn into pictures --------------------------------------------------------------

@pytest.mark.parametrize("phrase", ["women are", "are pigs", "call 555 0199", "send nudes", "immigrants are"])
@pytest.mark.parametrize("background", [(255, 255, 255), (245, 245, 245), (40, 40, 40)])
def test_rendered_words_ocr_back_on_a_plain_background(text_font, tesseract, phrase, background):
    picture = Image.new("RGB", SIZE, background)
    role = "A" if phrase.endswith("are") else "B"
    placed = place_text(picture, CENTRED, phrase, text_role=role, rng=random.Random(3))
    assert placed is not None
    drawn, placement = placed
    assert ocr_words(drawn) == words(phrase), placement


def test_text_card_ocrs_back(text_font, tesseract):
    text = "women are pigs and nobody will say it"
    card = render_text_card(text)
    assert card.size == SIZE and card.mode == "RGB"
    assert ocr_words(card) == words(text)
    dark = render_text_card("are pigs", (320, 240), background=(0, 0, 0))
    assert dark.size == (320, 240)
    assert ocr_words(dark) == ["are", "pigs"]


def test_text_card_rejects_what_it_cannot_draw(text_font):
    with pytest.raises(ValueError, match="no text"):
        render_text_card("   ")
    with pytest.raises(ValueError, match="too long"):
        render_text_card("word " * 400, (120, 90))


@pytest.mark.parametrize("background", [(0, 0, 0), (255, 255, 255)])
def test_text_is_legible_on_black_and_on_white(text_font, tesseract, background):
    picture = Image.new("RGB", SIZE, background)
    drawn, placement = place_text(picture, CENTRED, "are pigs", text_role="B", rng=random.Random(0))
    assert ocr_words(drawn) == ["are", "pigs"]
    # the fill contrasts with the background, the stroke is the other colour
    assert placement.fill != background and placement.stroke_fill == background
    assert placement.stroke_width >= 1


def test_the_stroke_keeps_text_visible_where_the_fill_matches_the_background(text_font):
    """Half black, half white: the fill cannot contrast with both halves. Where white letters
    lie on white, only the black stroke draws them; without a stroke they vanish."""
    picture = Image.new("RGB", SIZE, (255, 255, 255))
    ImageDraw.Draw(picture).rectangle((0, 0, SIZE[0] // 2 - 1, SIZE[1]), fill=(0, 0, 0))
    salient = (200, 260, 280, 350)  # low in the picture: the text goes above it, across both halves
    drawn, placement = place_text(picture, salient, "women are", text_role="A", rng=random.Random(0))
    assert placement.box[0] < SIZE[0] // 2 < placement.box[2], placement
    same = (255, 255, 255) if placement.fill == (255, 255, 255) else (0, 0, 0)
    half = (SIZE[0] // 2, placement.box[1], placement.box[2], placement.box[3]) if same == (255, 255, 255) \
        else (placement.box[0], placement.box[1], SIZE[0] // 2, placement.box[3])
    visible = changed_box(picture.crop(half), drawn.crop(half))
    assert visible is not None  # the outline shows the letters on the matching half

    bare = picture.copy()
    draw_text(bare, "women are", placement.box, font_size=placement.font_size, stroke_width=0,
              fill=placement.fill, stroke_fill=placement.stroke_fill)
    assert changed_box(picture.crop(half), bare.crop(half)) is None  # no stroke: nothing to see there


def test_placements_keep_the_overlap_and_reading_order_rules(text_font):
    """Many random salient boxes (seeded): every placement keeps <= 30% of the text on the
    object, follows reading order, stays inside the picture, and draws only inside its box."""
    rng = random.Random(12)
    phrases = ["women are", "are pigs", "Tel: 555 0199", "my", "immigrants are criminals"]
    placed_count = 0
    positions_used = set()
    for _ in range(150):
        w, h = rng.randint(20, 300), rng.randint(20, 250)
        x, y = rng.randint(0, SIZE[0] - w), rng.randint(0, SIZE[1] - h)
        salient = (x, y, x + w, y + h)
        role = rng.choice("AB")
        picture = Image.new("RGB", SIZE, (rng.randrange(256), rng.randrange(256), rng.randrange(256)))
        original = picture.tobytes()
        placed = place_text(picture, salient, rng.choice(phrases), text_role=role, rng=rng)
        if placed is None:
            continue
        drawn, p = placed
        placed_count += 1
        positions_used.add(p.position)
        assert p.position in POSITIONS and p.position in p.candidates
        assert 0 <= p.box[0] < p.box[2] <= SIZE[0] and 0 <= p.box[1] < p.box[3] <= SIZE[1]
        assert share_on(p.box, salient) <= MAX_OVERLAP
        assert p.overlap == pytest.approx(share_on(p.box, salient))
        assert in_reading_order(p.box, salient, role), (p, salient, role)
        changed = changed_box(picture, drawn)
        assert changed is not None
        assert p.box[0] <= changed[0] and p.box[1] <= changed[1]
        assert changed[2] <= p.box[2] and changed[3] <= p.box[3]
        assert picture.tobytes() == original  # drawn on a copy: the caller's picture is untouched
    assert placed_count > 40
    assert len(positions_used) >= 6


def test_candidates_for_a_centred_object_follow_the_papers_example(text_font):
    """The paper: for B, middle right, bottom middle and bottom right; A mirrors that."""
    small = (90, 30)
    b = candidate_positions(SIZE, small, CENTRED, "B")
    a = candidate_positions(SIZE, small, CENTRED, "A")
    assert [name for name, _, _ in b] == ["middle_right", "bottom_middle", "bottom_right"]
    assert [name for name, _, _ in a] == ["top_left", "top_middle", "middle_left"]
    for _, box, overlap in a + b:
        assert overlap == pytest.approx(share_on(box, CENTRED))
    with pytest.raises(ValueError, match="text_role"):
        candidate_positions(SIZE, small, CENTRED, "C")


def test_overlap_rule_drops_positions_on_the_object(text_font):
    """A wide text: middle_right would lie more than 30% on the object, so B keeps only the
    bottom row; an object filling the bottom leaves B nowhere."""
    wide = (300, 40)
    names = [name for name, _, _ in candidate_positions(SIZE, wide, CENTRED, "B")]
    assert "middle_right" not in names and names == ["bottom_middle", "bottom_right"]
    assert candidate_positions(SIZE, wide, (0, 150, 480, 360), "B") == []


def test_a_pair_with_no_valid_position_is_discarded(text_font):
    picture = Image.new("RGB", SIZE, (200, 200, 200))
    whole = (0, 0, SIZE[0], SIZE[1])
    assert place_text(picture, whole, "are pigs", text_role="B", rng=random.Random(0)) is None
    # a text too long to fit even at the smallest legible size is discarded too
    long = "an extremely long piece of contact information " * 4
    assert place_text(picture, CENTRED, long, text_role="B", rng=random.Random(0)) is None


def test_text_size_follows_the_salient_area(text_font):
    """The text box covers 0.8-1.2x the object's area when it fits (font sizes are whole
    pixels, so within a few percent)."""
    picture = Image.new("RGB", SIZE, (255, 255, 255))
    for seed in range(10):
        _, p = place_text(picture, CENTRED, "women are", text_role="A", rng=random.Random(seed))
        box_area = (p.box[2] - p.box[0]) * (p.box[3] - p.box[1])
        ratio = box_area / ((CENTRED[2] - CENTRED[0]) * (CENTRED[3] - CENTRED[1]))
        assert 0.8 * 0.9 <= ratio <= 1.2 * 1.1
        assert p.area_ratio == pytest.approx(ratio)


def test_same_inputs_and_seed_give_identical_png(text_font, emoji_font):
    from modlens.fusion.render.keyword_image import keyword_image

    table = load_emoji_table()

    def make(seed: int) -> tuple[str, dict]:
        rng = random.Random(seed)
        found = keyword_image("pig", folder=None, emoji_table=table, rng=rng)
        assert found is not None
        drawn, placement = place_text(found.image, found.salient, "women are", text_role="A", rng=rng)
        return to_png_blob(drawn).sha256, placement.as_params()

    assert make(7) == make(7)
    assert len({make(seed)[1]["position"] for seed in range(12)}) > 1  # the seed does choose


# --- PNG bytes --------------------------------------------------------------------------------

def test_png_blob_depends_on_pixels_only(tmp_path):
    picture = Image.new("RGB", (64, 48), (10, 200, 30))
    ImageDraw.Draw(picture).rectangle((5, 5, 30, 20), fill=(250, 0, 0))
    info = PngImagePlugin.PngInfo()
    info.add_text("Software", "something else")
    path = tmp_path / "with-metadata.png"
    picture.save(path, pnginfo=info, dpi=(300, 300))
    with Image.open(path) as reopened:
        reopened.load()
        assert reopened.info  # the file does carry metadata
        from_file = to_png_blob(reopened)
    blob = to_png_blob(picture)
    assert blob.mime == "image/png" and blob.sha256 == from_file.sha256
    assert b"Software" not in blob.data and b"pHYs" not in blob.data
    with Image.open(tmp_path / "with-metadata.png") as again:
        assert again.convert("RGB").tobytes() == picture.tobytes()
    palette = picture.convert("P")
    with Image.open(io.BytesIO(to_png_blob(palette).data)) as decoded:
        assert decoded.convert("RGB").tobytes() == palette.convert("RGB").tobytes()


# --- emoji --------------------------------------------------------------------------------

def test_emoji_renders_as_a_coloured_transparent_image(emoji_font):
    from modlens.fusion.render.emoji_image import render_emoji

    pig = render_emoji("🐷", 160)
    assert pig.mode == "RGBA" and pig.size == (160, 160)
    assert pig.getpixel((0, 0))[3] == 0 and pig.getpixel((159, 159))[3] == 0
    pixels = np.asarray(pig).reshape(-1, 4).astype(int)
    opaque = pixels[pixels[:, 3] > 200]
    assert len(opaque) > 0.3 * 160 * 160
    colourful = opaque[opaque[:, :3].max(axis=1) - opaque[:, :3].min(axis=1) > 40]
    assert len(colourful) > 0.3 * len(opaque)  # pink, not grey
    box = pig.getbbox()
    assert box is not None and max(box[2] - box[0], box[3] - box[1]) >= 150  # scaled to fill the size
    assert render_emoji("🐷", 48).size == (48, 48)
    with pytest.raises(ValueError, match="no picture"):
        render_emoji("A")


def test_every_emoji_in_the_shipped_table_renders(emoji_font):
    from modlens.fusion.render.emoji_image import render_emoji

    for keyword, emoji in load_emoji_table().items():
        assert render_emoji(emoji, 32).getbbox() is not None, keyword


def test_missing_fonts_say_what_to_install(tmp_path, monkeypatch):
    with pytest.raises(FusionUnavailable) as err:
        fonts.find_font(fonts.TEXT_FONT_NAMES, fonts.TEXT_FONT_ENV, fonts.TEXT_FONT_FIX, dirs=(tmp_path,))
    assert "fonts-dejavu-core" in err.value.fix
    monkeypatch.setenv(fonts.EMOJI_FONT_ENV, str(tmp_path / "nowhere.ttf"))
    with pytest.raises(FusionUnavailable) as err:
        fonts.emoji_font_path()
    assert "fonts-noto-color-emoji" in err.value.fix and fonts.EMOJI_FONT_ENV in str(err.value)
    not_a_font = tmp_path / "broken.ttf"
    not_a_font.write_text("not a font")
    monkeypatch.setenv(fonts.EMOJI_FONT_ENV, str(not_a_font))
    with pytest.raises(FusionUnavailable):
        fonts.emoji_font()


def test_emoji_table_lookup_and_user_extension(tmp_path):
    table = load_emoji_table()
    assert len(table) >= 30
    for keyword, emoji in {"pig": "🐷", "rat": "🐀", "snake": "🐍", "clown": "🤡", "dog": "🐕",
                           "phone": "📞", "email": "📧", "money": "💰"}.items():
        assert table[keyword] == emoji
    assert emoji_for("Pigs", table) == "🐷" and emoji_for("RATS", table) == "🐀"
    assert emoji_for("bitches", table) == table["bitch"]
    assert emoji_for("unicorn", table) is None
    assert word_forms("puppy") == ["puppy", "puppys", "puppies"]
    assert "pony" in word_forms("ponies")

    mine = tmp_path / "mine.tsv"
    mine.write_text("# my study's additions\nkeyword\temoji\tnote\npig\t🐖\twhole pig\nUnicorn\t🦄\tnew\n",
                    encoding="utf-8")
    extended = load_emoji_table(mine)
    assert extended["pig"] == "🐖" and extended["unicorn"] == "🦄" and extended["rat"] == "🐀"
    assert load_emoji_table()["pig"] == "🐷"  # the shipped table is not changed by loading a user's

    bad = tmp_path / "bad.tsv"
    bad.write_text("keyword\temoji\tnote\npig\n", encoding="utf-8")
    with pytest.raises(EmojiTableError, match=r"bad.tsv:2") as err:
        load_emoji_table(bad)
    assert "tab-separated" in err.value.fix
    swapped = tmp_path / "swapped.tsv"
    swapped.write_text("pig\tpig face\tnote\n", encoding="utf-8")
    with pytest.raises(EmojiTableError, match="not an emoji"):
        load_emoji_table(swapped)
    with pytest.raises(EmojiTableError, match="no emoji table"):
        load_emoji_table(tmp_path / "missing.tsv")


# --- keyword pictures ------------------------------------------------------------------------

def test_keyword_image_from_a_user_folder(tmp_path, emoji_font):
    from modlens.fusion.render.keyword_image import keyword_image

    label = tmp_path / "images" / "Pigs"
    label.mkdir(parents=True)
    for name, box in (("a.png", (100, 80, 200, 160)), ("b.png", (300, 200, 420, 330))):
        picture = Image.new("RGB", SIZE, (250, 250, 250))
        ImageDraw.Draw(picture).rectangle((box[0], box[1], box[2] - 1, box[3] - 1), fill=(230, 90, 120))
        picture.save(label / name)
    (label / "notes.txt").write_text("not an image")
    table = load_emoji_table()

    picks = {}
    for seed in range(8):
        found = keyword_image("PIG", folder=tmp_path / "images", emoji_table=table, rng=random.Random(seed))
        assert found is not None and found.image.mode == "RGB" and found.image.size == SIZE
        assert found.source["kind"] == "folder" and found.source["label"] == "Pigs"
        picks[found.source["file"]] = found.salient
    assert picks == {"Pigs/a.png": (100, 80, 200, 160), "Pigs/b.png": (300, 200, 420, 330)}
    again = keyword_image("pigs", folder=tmp_path / "images", emoji_table=table, rng=random.Random(3))
    first = keyword_image("pigs", folder=tmp_path / "images", emoji_table=table, rng=random.Random(3))
    assert again is not None and first is not None and again.source == first.source

    # a smaller picture is fitted into the size, its object's box scaled with it
    small = tmp_path / "images" / "rat"
    small.mkdir()
    picture = Image.new("RGB", (240, 180), (20, 20, 20))
    ImageDraw.Draw(picture).rectangle((60, 45, 179, 134), fill=(200, 200, 40))
    picture.save(small / "r.jpg", quality=90)
    rat = keyword_image("rats", folder=tmp_path / "images", emoji_table=table, rng=random.Random(0))
    assert rat is not None and rat.source["kind"] == "folder"
    assert all(abs(got - want) <= 3 for got, want in zip(rat.salient, (120, 90, 360, 270)))

    # no label in the folder: the keyword's emoji on a plain canvas; neither: None
    snake = keyword_image("snake", folder=tmp_path / "images", emoji_table=table, rng=random.Random(0))
    assert snake is not None and snake.source["kind"] == "emoji" and snake.source["emoji"] == "🐍"
    left, top, right, bottom = snake.salient
    assert snake.image.getpixel((5, 5)) == (245, 245, 245)
    inside = np.asarray(snake.image.crop(snake.salient)).reshape(-1, 3)
    assert (inside != (245, 245, 245)).any(axis=1).mean() > 0.3  # the emoji fills its box
    outside = np.asarray(snake.image.crop((0, 0, left, 360))).reshape(-1, 3)
    assert (outside == (245, 245, 245)).all()
    assert keyword_image("zebra crossing", folder=tmp_path / "images", emoji_table=table,
                         rng=random.Random(0)) is None
    with pytest.raises(FileNotFoundError, match="no image folder"):
        keyword_image("pig", folder=tmp_path / "nowhere", emoji_table=table, rng=random.Random(0))


def test_placed_text_beside_an_emoji_reads_back(text_font, emoji_font, tesseract):
    """The I+T case as generated: the pig emoji with "women are" placed before it (A)."""
    from modlens.fusion.render.keyword_image import keyword_image

    found = keyword_image("pig", folder=None, emoji_table=load_emoji_table(), rng=random.Random(0))
    assert found is not None
    drawn, placement = place_text(found.image, found.salient, "women are", text_role="A", rng=random.Random(5))
    assert in_reading_order(placement.box, found.salient, "A")
    assert share_on(placement.box, found.salient) <= MAX_OVERLAP
    read = ocr_words(drawn)
    assert "women" in read and "are" in read


def test_fonts_are_found_once_and_identified(text_font):
    path = fonts.text_font_path()
    assert path.is_file()
    assert re.fullmatch(r".+\.(ttf|otf|ttc)@[0-9a-f]{8}", fonts.font_id(path))
    assert fonts.text_font(30).size == 30


def test_video_frames_use_the_one_text_card(text_font):
    # the card lives in text_image alone (the package imports none of its modules: no import cycle)
    from modlens.fusion.render import text_image, video

    assert video.render_text_card is text_image.render_text_card
