"""write, check and pack a multi-participant study folder

`modlens study init DIR` writes an annotated study folder (study.toml, consent.md,
calibration.toml, tasks.toml); `modlens study check DIR` validates it, naming the file, key and
fix of every problem; `modlens study pack DIR --out study.modlens` makes the one file each
participant opens with `modlens join` (docs/MULTI.md), signed with `--sign-key` by a key from
`modlens study keygen --out PATH` (kept outside any study folder); `modlens study add-attacks DIR
--from LOG` queues successful, quality-filtered attacks for the human check (docs/PERTURB.md);
`modlens study assign DIR` cuts the folder's item set (`modlens sample`) into tasks for raters
(assignment.json) and `modlens study export-tasks DIR --format labelstudio|potato|survey --out OUT`
writes them for a crowd platform (docs/MULTI.md#item-set-studies).
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from modlens.cli.common import CliError
from modlens.errors import ErrorKind, Problem, problem_lines

if TYPE_CHECKING:
    from modlens.study.folder import StudyFolder


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    init = actions.add_parser("init", help="write a new, annotated study folder")
    init.add_argument("dir", metavar="DIR", help="folder to create (must not hold a study yet)")
    init.add_argument("--study-id", help="study id (default: the folder's name)")
    init.add_argument("--title", help="study title shown to participants")
    check = actions.add_parser("check", help="validate a study folder")
    check.add_argument("dir", metavar="DIR", help="the study folder (or its study.toml)")
    pack = actions.add_parser("pack", help="make the file participants open with `modlens join`")
    pack.add_argument("dir", metavar="DIR", help="the study folder (or its study.toml)")
    pack.add_argument("--out", required=True, metavar="FILE", help="pack to write, e.g. study.modlens")
    pack.add_argument("--sign-key", metavar="KEY", help="sign the pack with this key (modlens study keygen)")
    keygen = actions.add_parser("keygen", help="make the Ed25519 key that signs your study packs")
    keygen.add_argument("--out", required=True, metavar="KEY",
                        help="key file to create, outside every study folder (e.g. ~/.config/modlens/researcher.key)")
    assign = actions.add_parser("assign", help="cut the folder's item set into rater tasks (assignment.json)")
    assign.add_argument("dir", metavar="DIR", help="the study folder holding itemset.json")
    assign.add_argument("--raters", type=int, default=5, help="raters per item (default: 5)")
    assign.add_argument("--items-per-task", type=int, default=12, help="item-set comments per task (default: 12)")
    assign.add_argument("--gold-per-task", type=int, default=3, help="gold comments added to each task (default: 3)")
    assign.add_argument("--seed", type=int, default=0, help="seed of the tasks and of each rater's order (default: 0)")
    assign.add_argument("--force", action="store_true", help="replace an existing assignment.json")
    tasks = actions.add_parser("export-tasks", help="write the assignment for Label Studio, Potato or a survey platform")
    tasks.add_argument("dir", metavar="DIR", help="the study folder holding itemset.json and assignment.json")
    tasks.add_argument("--format", required=True, choices=["labelstudio", "potato", "survey"], help="the platform")
    tasks.add_argument("--out", required=True, metavar="OUT", help="folder to write the files to")
    add = actions.add_parser("add-attacks", help="queue successful attacks from a study log for raters (human check)")
    add.add_argument("dir", metavar="DIR", help="the study folder (review items go to its calibration.toml)")
    add.add_argument("--from", dest="log", required=True, metavar="LOG", help="study log holding the attack results")
    add.add_argument("--limit", type=int, help="add at most N new items (default: all that qualify)")
    add.add_argument("--goal", choices=["tae", "bae"], default="tae", help="which attacks (default: tae)")
    add.add_argument("--recipe", help="only this recipe (e.g. attack-tae, pwws)")
    add.add_argument("--target", help="only attacks on this detector")
    add.add_argument("--unfiltered", action="store_true",
                     help="also attacks the quality filters remove or could not check (default: only those "
                          "every filter checked and passed)")


def run(args: argparse.Namespace) -> int:
    from modlens.study import folder as study_folder
    from modlens.study import pack, pack_rules

    if args.action == "init":
        try:
            files = study_folder.init_folder(args.dir, args.study_id, args.title)
        except FileExistsError as err:
            raise CliError(str(err), fix="choose a new folder, or edit the files already there") from None
        loaded = study_folder.load_folder(args.dir)
        for f in files:
            print(f"wrote {f}")
        print(f"study {loaded.study.study_id!r}: edit the files, then `modlens study check {args.dir}` "
              f"and `modlens study pack {args.dir} --out {loaded.study.study_id}.modlens`")
        return 0
    if args.action == "add-attacks":
        return _add_attacks(args)
    if args.action == "keygen":
        return _keygen(Path(args.out).expanduser())
    loaded = study_folder.load_folder(args.dir)
    if args.action in ("assign", "export-tasks"):
        return _item_set_action(args, loaded)
    if args.action == "check":
        s = loaded.study
        from modlens.study.assignment import check_folder

        set_problems = check_folder(loaded.path, s)
        if set_problems:
            raise CliError(f"{loaded.path}: invalid item set or assignment\n" + problem_lines(set_problems))
        # a folder with side files refused them already; a lone study.toml may run with them
        refused = [Problem(f"study pack refuses: {p.message}", p.fix) for p in pack_rules.refusals(s)]
        for problem in [*refused, *study_folder.warnings(loaded)]:
            print(f"warning: {problem.message}" + (f"\n  fix: {problem.fix}" if problem.fix else ""))
        for note in study_folder.data_flow(s):
            print(f"note: {note}")
        print(f"ok: study {s.study_id!r}, {len(s.detectors)} detectors, {len(s.attributes)} attributes, "
              f"{len(s.gold)} gold comments, {len(s.tasks)} task pages, free browsing "
              f"{'allowed' if s.free_browsing else 'off'}"
              + (f", {len(s.review)} attack texts to review" if s.review else ""))
        return 0
    try:
        written = pack.write(loaded, args.out, args.sign_key and Path(args.sign_key).expanduser())
    except FileNotFoundError as err:
        raise CliError(str(err), kind=ErrorKind.NOT_FOUND, fix="make one with `modlens study keygen --out PATH`") from None
    print(f"wrote {args.out}: study {written['study_id']!r}, sha256 {written['sha256']}")
    if "signer" in written:
        from modlens.signing import fingerprint

        print(f"signed by {fingerprint(written['signer']['public_key'])}; participants see it at join")
    else:
        print("unsigned: `modlens join` joins it only on a yes at the terminal or with --allow-unsigned, and the "
              "extension's options page refuses it (sign with --sign-key KEY)")
    print(f"participants run: modlens join {args.out}")
    return 0


def _item_set_action(args: argparse.Namespace, loaded: StudyFolder) -> int:
    from modlens.study import assignment, crowd
    from modlens.study.itemset import FILE, read

    itemset = read(loaded.path / FILE)
    if args.action == "assign":
        if (loaded.path / assignment.FILE).exists() and not args.force:
            raise CliError(f"{loaded.path / assignment.FILE} already exists",
                           fix="pass --force to replace it (raters given the old tasks would no longer match)")
        data = assignment.make(itemset, loaded.study, raters=args.raters, items_per_task=args.items_per_task,
                               gold_per_task=args.gold_per_task, seed=args.seed)
        if args.gold_per_task < 1:
            raise CliError(f"--gold-per-task {args.gold_per_task}: the acceptance rule (Table 11) judges raters by "
                           "their gold answers, so every task needs gold",
                           fix="give --gold-per-task 3 (the Perspective study's design: Table 11 as printed), or 1 "
                               "or 2 (Table 11 scaled, docs/MULTI.md#acceptance)")
        path = assignment.write(data, loaded.path)
        print(f"wrote {path}: {len(itemset['items'])} items in {len(data['tasks'])} tasks of up to "
              f"{args.items_per_task} + {args.gold_per_task} gold, {args.raters} raters each: "
              f"{len(data['assignments'])} assignments")
        from modlens.study.acceptance import rule

        rules = sorted({rule(len(t["gold"]), len(t["items"])) for t in data["tasks"]})
        print("acceptance: " + "; ".join(rules))
        return 0
    from modlens.study.units import write_key

    plan = assignment.Plan.load(loaded.path, loaded.study)
    for f in crowd.export(plan, args.format, args.out):
        print(f"wrote {f}")
    key = write_key(plan, loaded.path)
    print(f"wrote {key}: which unit id is which comment, gold included; for you only: the exported files name "
          "comments by these ids, so do not upload or share it")
    return 0


def _keygen(out: Path) -> int:
    from modlens import signing
    from modlens.study.pack import outside_folder

    outside_folder(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        key = signing.new_key_file(out)
    except signing.SigningError as err:
        raise CliError(str(err), fix="sign with the key you have, or choose another path") from None
    print(f"wrote {out} (owner-only): fingerprint {signing.fingerprint(signing.public_key_b64(key))}")
    print("publish the fingerprint where participants can compare it (they see it at join); "
          f"sign packs with `modlens study pack DIR --out FILE --sign-key {out}`")
    return 0


def _add_attacks(args: argparse.Namespace) -> int:
    from modlens.config import StudyConfigError
    from modlens.study.folder import load_folder
    from modlens.study.review import add_attacks
    from modlens.studylog.connection import StudyLogError

    if args.limit is not None and args.limit < 1:
        raise CliError("--limit must be at least 1", fix="give --limit N with N >= 1, or leave it out")
    load_folder(args.dir)  # the folder's own problems first, with their fixes
    try:
        res = add_attacks(args.dir, args.log, limit=args.limit, goal=args.goal, recipe=args.recipe,
                          target=args.target, filtered=not args.unfiltered)
    except StudyLogError as err:
        raise CliError(str(err), kind=ErrorKind.NOT_FOUND, fix=getattr(err, "fix", None)
                       or "pass the study log that `modlens audit --attack` wrote") from None
    except StudyConfigError as err:
        raise CliError(f"the review items would make the study invalid (nothing written): {err}") from None
    print(f"{res.candidates} successful {args.goal.upper()}s selected, {res.filtered_out} removed by the quality "
          f"filters, {res.not_checked} left out because a filter was not checked (--unfiltered takes them), "
          f"{res.already} already queued, {res.repeats} the same text as another; added {len(res.added)} review "
          f"item(s) to {args.dir}" + (f"; {res.over_limit} more left for a later run (--limit)" if res.over_limit else ""))
    if not res.added and not res.candidates:
        print("nothing to add: the log has no successful attack matching the selection")
    else:
        print(f"next: `modlens study check {args.dir}`, then pack; raters see them in the calibration round")
    return 0
