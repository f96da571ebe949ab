"""The files `modlens study init` writes: annotated, valid as written, to be edited."""
from __future__ import annotations

STUDY_TOML = '''\
# A modlens study (docs/MULTI.md). `modlens study check DIR` validates this folder,
# `modlens study pack DIR --out study.modlens` makes the one file participants open.
# Beside this file: consent.md (the consent text), calibration.toml (anchors and gold
# comments), tasks.toml (the pages every participant visits). docs/STUDY.md lists every key.

# Written with every session and rating; letters, digits, '_', '.', '-' (at most 64).
study_id = "{study_id}"
title = "{title}"

# Author names are hashed in the browser with this salt. Every participant gets the same
# salt through the pack, so one author has one hash across participants. Do not change it
# once participants have joined (their hashes would no longer link).
author_salt = "{salt}"

toxicity_mode = "anchors"   # two anchor comparisons (the Perspective study, Table 1); "direct": a 3-point scale
display = "blind"           # scores stay hidden until the participant has rated; "scores" shows them

# Detectors every participant runs locally (`modlens detectors` lists them). Keep API keys
# out of this file: packs refuse options that look like secrets.
[[detectors]]
name = "minilm-toxicity"

[[detectors]]
name = "profanity-check"

# Which comments participants are asked to rate. "deciles" balances comments over the score
# range as the paper did (per_decile percent of each score decile, or decile_rates = [ten shares]);
# "all"; or "random" with a rate. Decisions hash the study and the comment key, so every
# participant who sees a comment gets the same decision and ratings overlap.
[sampling]
mode = "deciles"
per_decile = 10
seed = 0
'''

CONSENT_MD = '''\
You are invited to take part in "{title}", a study of how automatic toxicity detectors judge
online comments compared with people.

While you take part, modlens records, on this computer only: the comments shown on the study's
pages and on the sites you enable, the address and title of each of those pages, the scores of
the study's toxicity detectors, and your ratings. Authors' handles and names are not in the log:
comment authors are hashed in your browser before anything is recorded, and page addresses and
titles are recorded without the author a site names in them (on X, a post's address without the
handle, its title without the name). Comments and titles are kept as written, names they mention
included.

At the end you export one file (`modlens export --bundle`), look at what is inside
(`--show`), and send it to the researcher yourself: modlens does not send it for you.
You can pause or withdraw at any time, and delete the study log.
'''

CALIBRATION_TOML = '''\
# Anchors: the two comparison comments of the toxicity question (the Perspective study, Table 1);
# one with role "hard_to_say" and one with role "extreme".
[[anchors]]
key = "anchor-hard"
role = "hard_to_say"
rating = "hard to say"
text = "Honestly this is the dumbest policy I've seen in years, but fine, whatever."

[[anchors]]
key = "anchor-extreme"
role = "extreme"
rating = "toxic"
text = "You are a worthless idiot and everyone here would be better off without you."

# Gold comments: attention checks with known answers, mixed into each participant's work
# (three per task of 15 in the paper). `expected` uses the study's attributes and levels.
[[gold]]
key = "gold-insult"
text = "You are a stupid worthless idiot and nobody wants you here."
expected = {{ toxicity = "toxic", respectfulness = "disrespectful" }}

[[gold]]
key = "gold-thanks"
text = "Thank you for the clear explanation, this helped me a lot."
expected = {{ toxicity = "not toxic", respectfulness = "respectful" }}

[[gold]]
key = "gold-formal"
text = "I respectfully disagree with the author's conclusion, for the reasons set out below."
expected = {{ formality = "formal", toxicity = "not toxic" }}
'''

TASKS_TOML = '''\
# Pages every participant visits, so the same comments are rated by several people
# (Krippendorff's alpha and majority ratings need that overlap). Replace the examples.
# `target` (optional): how many comments to rate on that page.

# false: comments are collected on the task pages only; true: also on other pages the
# participant enables.
free_browsing = false

[[tasks]]
url = "https://www.youtube.com/watch?v=REPLACE_ME"
title = "A YouTube video with an active comment section"
target = 15

[[tasks]]
url = "https://x.com/REPLACE_ME/status/1"
title = "An X thread"
target = 15

[[tasks]]
url = "https://www.example-news.com/REPLACE_ME"
title = "A news article with comments"
target = 15
'''
