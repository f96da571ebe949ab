"""The wiring that live comments (the live service) and dataset audits share: loading a
study's detectors, registering the study and its detectors in the study log, and recording
comments, scores, normalizations and variants. A new source of input (Ray, merge, fusion)
reuses these and differs only in where its texts come from."""
