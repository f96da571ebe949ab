"""What the tests that run annotation tools for real share (tests/test_labelstudio_real.py,
tests/test_potato_real.py): a study folder with four comments of two platforms, its log as
`modlens serve` writes it, the answer each simulated annotator gives, and `modlens` run as
`python -m modlens` runs it: its `main`, in this process (a fresh interpreter per command cost ~1 s
of imports each; the checks of a refusal's exit status and stderr still run `python -m modlens`)."""
from __future__ import annotations

import io
import socket
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from modlens.study import crowd, itemset
from modlens.study.assignment import Plan
from modlens.study.folder import load_folder
from modlens.studylog.store import StudyLog

# (vs "hard to say" anchor, vs extreme anchor) per derived level, the extreme anchor rated "toxic" (Table 1)
ANCHORS = {"not toxic": ("less", "less"), "hard to say": ("same", "less"), "toxic": ("more", "same")}
ITEMS = [("youtube", "yt-1", "This video explains the tax rules better than my accountant."),
         ("youtube", "yt-2", "Nobody asked for your opinion, go away and stop posting."),
         ("x", "x-1", "What a clown, everything he says is a lie."),
         ("x", "x-2", "The train was late again this morning, third time this week.")]
TOXICITY = {"yt-1": "not toxic", "yt-2": "hard to say", "x-1": "toxic", "x-2": "not toxic"}


def modlens(*args: str) -> str:
    """`modlens ARGS`: its standard output; the command must exit 0."""
    from modlens.cli import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(args))
    assert code == 0, f"modlens {' '.join(args)}: exit {code}\n{out.getvalue()}\n{err.getvalue()}"
    return out.getvalue()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def listening(port: int) -> set[str]:
    """The addresses something listens on at TCP `port` on this machine (Linux's /proc/net/tcp and
    tcp6: addresses in the kernel's byte order, state 0A = LISTEN): {"127.0.0.1"} for a loopback-only
    server, "0.0.0.0" or "::" for one reachable from the network."""
    out = set()
    for name, family in (("tcp", socket.AF_INET), ("tcp6", socket.AF_INET6)):
        table = Path("/proc/net") / name
        if not table.exists():
            continue
        for line in table.read_text().splitlines()[1:]:
            fields = line.split()
            address, _, hex_port = fields[1].partition(":")
            if fields[3] != "0A" or int(hex_port, 16) != port:
                continue
            raw = bytes.fromhex(address)
            # each 32-bit word is stored in host (little-endian) order
            raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
            out.add(socket.inet_ntop(family, raw))
    return out


def make_study(tmp_path: Path, study_id: str, raters: int, items_per_task: int = 4) -> tuple[Path, Path, Plan]:
    """(study folder, study log, plan): the four comments in tasks of `items_per_task` items + 2 gold
    (of the three `study init` writes) for `raters` raters, the comments logged as `modlens serve`
    logs an item set."""
    folder = tmp_path / "study"
    modlens("study", "init", str(folder), "--study-id", study_id, "--title", f"{study_id} study")
    items = [{"id": f"i{n:03d}", "platform": p, "comment_key": k, "text": t, "stratum": "all", "score": None}
             for n, (p, k, t) in enumerate(ITEMS, 1)]
    params = {"detector": None, "by": "label:test", "per_platform": 2, "platforms": ["x", "youtube"],
              "min_words": 3, "max_words": 60, "seed": 0, "log": "test", "counts": {}}
    itemset.write({"format": itemset.FORMAT, "format_version": itemset.FORMAT_VERSION,
                   "sha256": itemset.checksum(params, items), "params": params, "items": items}, folder)
    modlens("study", "assign", str(folder), "--raters", str(raters), "--items-per-task", str(items_per_task),
            "--gold-per-task", "2")
    study = load_folder(folder).study
    plan = Plan.load(folder, study)
    db = tmp_path / "study.sqlite"
    from modlens.study.assignment import record_items
    with StudyLog(db) as lg:
        lg.ensure_study(study.study_id, study.title, study.model_dump(mode="json"))
        record_items(lg, study, plan)
    return folder, db, plan


def answers(plan: Plan, ref: str, toxicity: dict[str, str] = TOXICITY) -> dict[str, str]:
    """question -> choice for a comment: the gold comments' expected answers, the item's planted
    toxicity level as anchor answers, the first level of every other question."""
    gold = {g.key: dict(g.expected) for g in plan.study.gold}
    expected = dict(gold[ref[5:]]) if ref.startswith("gold:") else {}
    level = expected.pop("toxicity", None) or toxicity[plan.comment(ref)[1]]
    given = dict(zip(("vs_hard", "vs_extreme"), ANCHORS[level]))
    return {q.name: given.get(q.name) or expected.get(q.name) or q.choices[0] for q in crowd.questions(plan.study)}
