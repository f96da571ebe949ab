"""Test fixtures shared by every test, and the one place the suite's markers are applied.

Data sets come from the copies shipped inside the package (`src/modlens/datasets/data/`), so a
clone or an installed wheel tests the same data.

Markers (declared in pyproject.toml, applied by `pytest_collection_modifyitems` below):
- `browser`: the test drives a real Chromium or Firefox (it uses the e2e `playwright_instance`, or
  requires one of the browsers);
- `realtool`: it runs a tool outside the venv, `requires(tool)` (tests/realtools.py); where the tool
  is missing it is skipped, and under `CI=true` that skip fails the run unless the tool is in
  `realtools.CI_MAY_LACK`;
- `gpu`: it needs a CUDA device (`requires("gpu")`);
- `model`: it loads a real neural model (the session's MiniLM, or a module in `MODEL_MODULES`);
- `slow`: listed in `SLOW` below, with why. `make test-fast` runs `not browser and not slow and not
  realtool`, and with `--max-test-seconds` a test outside that list that takes longer fails the run,
  named (the fast loop stays fast).
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest
import realtools

from modlens.paths import shipped_data

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The shipped data folder: noisyhate/, hatecheck/, davidson/."""
    return shipped_data()


@pytest.fixture(autouse=True)
def modlens_home(tmp_path, monkeypatch) -> Path:
    """Every test gets its own MODLENS_HOME so tokens, logs and runtime files never leak."""
    home = tmp_path / "modlens-home"
    home.mkdir()
    monkeypatch.setenv("MODLENS_HOME", str(home))
    return home


# --- the session's MiniLM -------------------------------------------------------------------------

@pytest.fixture(scope="session")
def minilm():
    """One `minilm-toxicity` for the whole session (its load is 10 s cold): tests that only score
    with it share it; a test that changes a detector builds its own."""
    from modlens.detectors import registry
    return registry.create("minilm-toxicity")


def _share_minilm_weights(session) -> None:
    """MiniLM's weights are read from disk once per session (per worker under xdist), before the first test
    starts: every detector built on the embedded encoder in this process (a test's own, an audit's, an
    in-process daemon's, the sentence-similarity constraint's) gets the same read-only module. Nothing writes
    to it: the int8 twin quantizes a copy, a detector's close() only drops its reference. Tokenizers are not
    shared (one used from two threads at once fails). The read happens here, not in a fixture, so it is the
    session's cost and not the first model test's (whose time the fast loop's 2 s check would charge with
    it). Only where a selected test loads a model: a run of a few quick tests does not pay for it."""
    if "transformers" not in sys.modules or not any(item.get_closest_marker("model") for item in session.items):
        return
    import torch
    import transformers
    from modlens.detectors.minilm import default_model_dir

    if torch.cuda.is_available():  # an encoder on CUDA converts its module in place (half, to)
        return
    load = transformers.AutoModel.from_pretrained.__func__
    shared = str(default_model_dir())
    cache: dict[str, object] = {shared: load(transformers.AutoModel, shared)}

    def from_pretrained(cls, path, *args, **kwargs):
        if str(path) != shared or args or kwargs:
            return load(cls, path, *args, **kwargs)
        if str(path) not in cache:
            cache[str(path)] = load(cls, path)
        return cache[str(path)]

    mp = pytest.MonkeyPatch()
    mp.setattr(transformers.AutoModel, "from_pretrained", classmethod(from_pretrained))
    session.config.add_cleanup(mp.undo)


def pytest_collection_finish(session):
    if os.environ.get("PYTEST_XDIST_WORKER") and "torch" in sys.modules:
        # one thread per worker: two workers on two cores, each with torch's default of a thread per core,
        # made every model test wait for the other worker's threads (a 1 s test took 2-3 s at random)
        import torch
        torch.set_num_threads(1)
    _share_minilm_weights(session)


# --- markers, applied in one place ----------------------------------------------------------------

# Tests slower than the fast loop's limit, by node id prefix, with what makes them slow: real processes,
# whole searches, model training. Chosen from `make test-fast`'s own list of tests over the limit on the shared
# 2-core machine (2026-12-06, load 6-10: over ~7 s there); a test marked @pytest.mark.slow in its file counts too.
SLOW: dict[str, str] = {
    "tests/test_detectors_minilm.py::test_train_head_small_sample_is_reproducible": "trains a head on MiniLM embeddings, twice",
    "tests/test_detectors_minilm.py::test_head_hatecheck_report_on_the_shipped_file_is_unchanged": "scores HateCheck",
    "tests/test_detectors_onnx.py": "exports MiniLM to ONNX and quantizes it (the module's first test builds the file)",
    "tests/test_detectors_int8.py": "quantizes MiniLM (8- and 7-bit) and scores with each",
    "tests/test_duration_check.py": "runs pytest on planted tests that sleep past the check's limit",
    "tests/test_gpu_check_tiny.py::test_a_step_stopped_by_its_time_limit_keeps_what_it_printed":
        "waits out two child processes' time limits (3 s and 2 s: shorter ones fail a loaded machine's start-up)",
    "tests/test_detector_overlap_flag.py::test_a_detector_declares_releases_gil_exactly_when_its_score_runs_a_model"
    "[minilm-toxicity-onnx-int8]": "exports MiniLM to ONNX and quantizes it",
    "tests/test_detectors_cli.py::test_detectors_text_output_shows_fix_lines": "loads every built-in detector",
    "tests/test_detectors_cli.py::test_detectors_lists_every_entry_with_status": "loads every built-in detector",
    "tests/test_attack_recipes.py::test_recipes_on_minilm_with_a_judge": "each recipe's whole search against MiniLM",
    "tests/test_attack_checks_unavailable.py::test_a_check_made_without_its_model_is_made_once_the_model_is_installed":
        "loads the normalizer's lexicon and builds a report",
    "tests/test_attack_checks_unavailable.py::test_a_resumed_audit_attack_with_no_chunk_left_makes_the_checks_before_counting_them":
        "loads MiniLM and the normalizer's lexicon for its checks",
    "tests/test_attack_checks_unavailable.py::test_rescore_says_which_attack_checks_it_could_not_make_and_what_makes_them":
        "the first of its module to load the normalizer's lexicon when run alone (2.6-3.9 s)",
    "tests/test_audit_step_errors_exit.py::test_an_audit_whose_normalizer_failed_for_some_texts_says_so_and_exits_1":
        "loads profanity-check and the normalizer's lexicon",
    "tests/test_attack_recipes.py::test_every_recipe_on_profanity_check[toxictrap_combined_greedy]": "the recipe's whole search",
    "tests/test_attack_recipes.py::test_every_recipe_on_profanity_check[textbugger]": "the recipe's whole search",
    "tests/test_attack_recipes.py::test_every_recipe_on_profanity_check[toxictrap_combined_beam]": "the recipe's whole search",
    "tests/test_attack_recipes.py::test_every_recipe_on_profanity_check[toxictrap_word_greedy]": "the recipe's whole search",
    "tests/test_attack_recipes.py::test_every_recipe_on_profanity_check[a2t]": "the recipe's whole search",
    "tests/test_attack_recipes.py::test_every_recipe_on_profanity_check[textfooler]": "the recipe's whole search",
    "tests/test_attack_recipes.py::test_every_recipe_on_profanity_check[toxictrap_char_greedy]": "the recipe's whole search",
    "tests/test_attack_budget.py::test_no_query_is_spent_ranking_a_word_the_recipe_may_not_edit[textbugger]": "its search",
    "tests/test_cli_attack_text_call_fails.py::test_a_judge_whose_call_raises_leaves_the_flip_unknown":
        "loads profanity-check and runs DeepWordBug's search",
    "tests/test_cli_attack_text_call_fails.py::test_perturb_whose_target_call_raises_ranks_by_the_heuristic_and_goes_on":
        "a refused http target: each of its calls takes ~0.7 s to fail",
    "tests/test_cli_attack_text_call_fails.py::test_a_target_whose_call_raises_is_an_unknown_result_for_every_text"
    "[attack-text]": "a refused http target (~0.4 s a call) and the recipes' first import",
    "tests/test_attack_budget.py::test_no_query_is_spent_ranking_a_word_the_recipe_may_not_edit[pwws]": "its search",
    "tests/test_variant_importance.py::test_the_model_sees_only_the_fixed_widths": "MiniLM over every padded width",
    "tests/test_variant_importance.py::test_padded_row_counts_keep_scores_and_bound_the_shapes": "MiniLM over many shapes",
    "tests/test_head_multi.py::test_train_six_reproduces_its_file": "trains the six-label head",
    "tests/test_study_pack_trust.py::test_declared_secrets_are_shown_and_remote_detectors_stay_off_until_accepted": "starts `modlens serve`",
    "tests/test_study_pack_dataflow.py::test_a_wrapped_remote_detector_is_shown_at_join_named_in_the_consent_and_off_until_accepted": "starts `modlens serve`",
    "tests/test_study_load.py::test_serve_loads_the_folders_gold_tasks_and_consent_however_it_is_named": "starts `modlens serve`",
    "tests/test_readme_first_screen.py::test_serve_prints_the_log_path_the_address_and_how_to_pair": "starts `modlens serve`",
    "tests/test_join_from_extension.py::test_serve_joins_a_pack_from_the_extension_and_restarts_on_it": "`modlens serve`, twice",
    "tests/test_join_from_extension.py::test_a_hand_edited_joined_study_is_restarted_on_when_its_pack_is_joined_again_from_the_extension":
        "`modlens serve`, twice",
    "tests/test_status_study_edited.py": "a real `modlens serve` process",
    "tests/test_perspective_logging.py::test_a_killed_daemon_keeps_every_call_it_answered": "kills a daemon process",
    "tests/test_report_reads_only.py::test_same_json_with_no_model_importable": "a second interpreter without the models",
    "tests/test_report_tables.py::test_csv_and_latex_carry_exactly_the_html_reports_figures": "renders the report three ways",
    "tests/test_ordlogit_separation.py::test_report_": "ordered-logit fits, penalized and not, in whole reports",
    "tests/test_report_people_honest_fits.py": "a synthetic study of 450 comments and its whole report, per test",
    "tests/test_attack_budget.py::test_a_spent_budget_returns_the_success_already_scored": "PWWS scores every word's swaps",
    "tests/test_studylog_concurrency.py::test_twelve_pairs_of_writers_on_fresh_logs_all_finish": "24 writer processes",
    "tests/test_analysis_report.py::test_html_is_self_contained_with_methods_and_versions": "a whole report",
    "tests/test_cli_consistency.py::test_feed_takes_platform_url_and_author_from_columns": "feeds a real daemon",
    "tests/test_labelled_metrics.py::test_labelled_section_matches_scikit_learn_per_source_and_group": "bootstrap intervals",
    "tests/test_plugins.py::test_modlens_detectors_lists_an_installed_detector_and_reports_a_broken_one": "installs a plug-in package",
    "tests/test_boundaries.py::test_no_package_cycles": "imports every module",
    "tests/test_bench_tiny.py::test_the_bench_runs_on_a_tiny_input[bench_merge]": "the bench's child processes",
    "tests/test_attack_recipes.py::test_character_recipes_flip_a_bag_of_words_detector": "every character recipe",
    "tests/test_attack_recipes.py::test_similarity_constraint_is_applied": "MiniLM judges every candidate",
    "tests/test_batching_perf.py::test_minilm_sub_batches_give_the_same_scores_as_one_at_a_time": "MiniLM, text by text",
    "tests/test_concurrent_log.py::test_two_audit_processes_on_one_log_both_finish_without_loss": "two audit processes",
    "tests/test_concurrent_log.py::test_an_audit_beside_a_running_daemon_receiving_comments": "a daemon process and an audit",
    "tests/test_dataset_readers.py::test_a_large_csv_is_consumed_chunk_by_chunk": "a CSV larger than a chunk, read whole",
    "tests/test_daemon_heap.py::test_sigusr1_writes_snapshots_whose_diff_names_what_grew": "a daemon process taking heap snapshots",
    "tests/test_daemon_hostile_messages.py::test_a_socket_whose_handler_fails_is_closed_and_freed": "waits for the socket to be freed",
    "tests/test_bench_hostile_inputs.py::test_hostile_inputs_bench_tiny_run": "runs the bench's child processes",
    "tests/test_bundle_hostile.py::test_tables_inflating_to_512_mib_are_refused_whatever_size_they_declare": "inflates 512 MiB",
    "tests/test_cli_feed.py": "a real `modlens serve` process for the module",
    "tests/test_study_folder.py::test_join_writes_the_study_serve_runs_and_refuses_to_switch_silently": "starts `modlens serve`",
    "tests/test_study_folder.py::test_join_says_a_running_daemon_keeps_serving_the_study_it_started_with": "starts `modlens serve`",
    "tests/test_study_folder.py::test_a_pack_join_would_refuse_for_its_size_is_not_written": "builds a 17 MiB item set",
    "tests/test_attack_defaults.py::test_audit_and_attack_run_a_recipe_with_the_same_default_limits": "two whole searches per recipe",
    "tests/test_normalize_speed_equivalence.py::test_supersequences_equal_regex_oracle": "every supersequence against the regex oracle",
    "tests/test_constraints.py::test_similarity_rejects_a_meaning_change_and_accepts_a_typo": "the normalizer's and the "
                                                                                           "encoder's first texts",
    "tests/test_cli_fuse.py::test_fuse_writes_cases_and_media_and_a_rerun_adds_nothing": "renders fused cases' images, twice",
    "tests/test_cli_fuse.py::test_fuse_export_manifest_matches_files": "renders fused cases' images (the process's first "
                                                                     "render loads the fonts)",
    "tests/test_report_sass_paper.py::test_the_documented_recipe_gives_every_sass_figure": "the documented recipe: its audits and a report",
    "tests/test_report_training_overlap.py::test_in_sample_is_an_integer_in_the_report_json_for_every_detector": "a whole report",
    "tests/test_audit_parquet_score_counts.py": "real audits through Ray, then `modlens import`",
    "tests/test_detectors_cli.py::test_detectors_that_need_options_are_not_listed_as_errors": "loads every built-in detector",
    "tests/test_detectors_cli.py::test_a_detector_that_fails_to_load_is_an_error_and_the_listing_exits_1":
        "loads every built-in detector",
    "tests/test_detectors_cli.py::test_hf_detectors_without_a_model_say_they_need_one_and_a_bad_model_is_still_an_error":
        "loads every built-in detector",
    "tests/test_detectors_cli.py::test_perspective_without_its_key_is_listed_as_the_help_says_missing_dependency_means":
        "loads every built-in detector",
    "tests/test_status_daemon_log_locked.py": "a daemon process waiting out its log's lock",
    "tests/test_pairing_first_use_race.py::test_processes_creating_the_token_at_once_all_get_the_stored_one":
        "40 trials of 4 processes racing",
    "tests/test_studylog_open_unwritable.py": "modlens commands in child processes under file-size limits and mounts",
    "tests/test_consent_withdrawal.py": "a real daemon, bundles exported and merged",
    "tests/test_forget_withdrawn.py": "a real daemon, bundles exported and merged, the merged log deleted from",
    "tests/test_report_hatecheck.py::test_html_has_the_paper_layout_and_the_skipped_sections":
        "a whole HTML report through the CLI, figures drawn (1.4 s alone, 2.0 s in the fast loop's two workers)",
    "tests/test_perspective_clients.py": "300 tweets through each real Perspective client (Google's, PyPI's, npm's)",
    "tests/test_perspective_languages.py::test_every_davidson_tweet_english_but_the_foreign_ones":
        "detects the language of all 24,783 Davidson tweets, twice (about 3 s each)",
    "tests/test_train_hashes_binding.py::test_train_head_in_place_of_a_head_writes_the_new_heads_set":
        "trains a head on MiniLM embeddings through the CLI (about 6 s)",
}

# Modules whose tests load a real neural model themselves (besides the `minilm` fixture's users).
MODEL_MODULES: tuple[str, ...] = tuple(f"tests/test_{name}.py" for name in (
    "detectors_minilm", "detectors_int8", "detectors_onnx", "detectors_hf", "detector_hf_image", "detector_asr",
    "head_multi", "variant_importance", "batching_perf", "attack_recipes", "attack_quality", "perturb_attack",
    "audit_attacks", "report_attacks", "attack_export", "ray_actors", "detector_overlap_flag",
))
MODEL_FIXTURES = ("minilm",)
BROWSERS = {"chromium", "firefox-esr"}
# fixtures that stand for a tool (they call realtools.need): a test using one is marked with the tool
FIXTURE_TOOLS: dict[str, tuple[str, ...]] = {
    "playwright_instance": ("chromium",),  # every e2e browser fixture starts from it
    "tesseract": ("tesseract",), "text_font": ("text-font",), "emoji_font": ("emoji-font",),
}


def _ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def pytest_addoption(parser):
    parser.addoption("--max-test-seconds", type=float, default=None,
                     help="fail the run, naming them, when tests not marked slow take longer than this (setup, "
                          "call and teardown together); `make test-fast` sets it")


def pytest_collection_modifyitems(config, items):
    for item in items:
        names = set(item.fixturenames)
        for fixture in names & FIXTURE_TOOLS.keys():
            item.add_marker(realtools.requires(*FIXTURE_TOOLS[fixture]))
        tools = [t for mark in item.iter_markers("realtool") for t in mark.args]
        if BROWSERS & set(tools):
            item.add_marker(pytest.mark.browser)
        if "gpu" in tools:
            item.add_marker(pytest.mark.gpu)
        if names & set(MODEL_FIXTURES) or item.nodeid.startswith(MODEL_MODULES):
            item.add_marker(pytest.mark.model)
        if any(item.nodeid.startswith(prefix) for prefix in SLOW):
            item.add_marker(pytest.mark.slow)
        reason = realtools.skip_reason(tuple(dict.fromkeys(tools)))
        if reason:
            item.add_marker(pytest.mark.skip(reason=reason))


# --- what a run must not hide: skips under CI, slow tests in the fast loop --------------------------

# Filled from the reports, which under pytest-xdist (`-n 2`) reach the controller from its workers: the controller
# collects no items of its own, so what a check needs (a test's marks, its time) is read from its reports.
_skipped: dict[str, str] = {}
_seconds: dict[str, float] = {}
_marked_slow: set[str] = set()


def _ci_may_skip(reason: str) -> bool:
    """A skip for missing tools, all of them ones CI may lack (realtools.CI_MAY_LACK)."""
    if not reason.startswith(realtools.SKIP_PREFIX):
        return False
    tools = reason[len(realtools.SKIP_PREFIX):].split(":", 1)[0]
    return all(t.strip() in realtools.CI_MAY_LACK for t in tools.split(","))


# A fixture shared by several tests (module or session scope) is set up inside the first test that asks for it;
# its time is the module's or session's, not that test's: it is taken off the test's time and checked on its own,
# against SHARED_TIMES times the limit (a module's setup may cost what a few of its tests may). The workers record
# it in the report (user_properties reach the controller under xdist).
SHARED_TIMES = 5
_shared: dict[str, float] = {}
_setting_up: list[pytest.Item] = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    _setting_up.append(item)
    try:
        yield
    finally:
        _setting_up.pop()


class SharedSetupTimer:
    """Times each shared fixture's setup. A plug-in of its own, not a hook of this conftest: pytest calls a
    conftest's hooks only for nodes under its folder, and a session-scoped fixture is set up for the session,
    which is above tests/ (the session's MiniLM was charged to the first test that asked for it)."""

    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef, request):
        start = time.perf_counter()  # its own time: the fixtures it depends on were set up before this hook
        yield
        if fixturedef.scope != "function" and _setting_up:
            where = request.node.nodeid or "session"
            _setting_up[-1].user_properties.append((f"shared setup: {where}::{fixturedef.argname}",
                                                    time.perf_counter() - start))


def pytest_configure(config):
    config.pluginmanager.register(SharedSetupTimer(), "modlens-shared-setup-timer")


def pytest_runtest_logreport(report):
    seconds = report.duration
    if report.when == "setup":  # the setup report carries the shared fixtures it built (later phases repeat them)
        for name, value in report.user_properties:
            if isinstance(name, str) and name.startswith("shared setup: "):
                _shared[name.removeprefix("shared setup: ")] = value
                seconds -= value
    _seconds[report.nodeid] = _seconds.get(report.nodeid, 0.0) + seconds
    if "slow" in report.keywords:  # a report's keywords hold its item's marks
        _marked_slow.add(report.nodeid)
    if report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        _skipped[report.nodeid] = reason.removeprefix("Skipped: ")


def _problems(session) -> list[str]:
    out = []
    if _ci():
        hidden = {n: r for n, r in _skipped.items() if not _ci_may_skip(r)}
        if hidden:
            out.append(f"CI=true: {len(hidden)} tests skipped; CI must run them (or list the tool in "
                       "tests/realtools.py's CI_MAY_LACK, with why):")
            out += [f"  {n}: {r}" for n, r in sorted(hidden.items())]
    limit = session.config.getoption("--max-test-seconds")
    if limit is not None:
        slow = {nodeid: seconds for nodeid, seconds in _seconds.items()
                if seconds > limit and nodeid not in _marked_slow and nodeid not in _skipped}
        if slow:
            out.append(f"{len(slow)} tests not marked slow took over {limit:g} s (make them faster, or list them in "
                       "tests/conftest.py's SLOW with why):")
            out += [f"  {n}: {s:.1f} s" for n, s in sorted(slow.items(), key=lambda kv: -kv[1])]
        shared = {name: seconds for name, seconds in _shared.items() if seconds > SHARED_TIMES * limit}
        if shared:
            out.append(f"{len(shared)} shared fixtures took over {SHARED_TIMES * limit:g} s to set up (make them "
                       "cheaper, or mark slow the tests that use them):")
            out += [f"  {n}: {s:.1f} s" for n, s in sorted(shared.items(), key=lambda kv: -kv[1])]
    return out


def pytest_sessionfinish(session, exitstatus):
    if hasattr(session.config, "workerinput"):  # an xdist worker: its controller sees every report and checks
        return
    session.config.stash[_PROBLEMS] = problems = _problems(session)
    if problems and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    for line in config.stash.get(_PROBLEMS, []):
        terminalreporter.write_line(line, red=not line.startswith("  "), bold=not line.startswith("  "))


_PROBLEMS = pytest.StashKey[list]()
