"""DUO semantic fusion (docs/FUSION.md): toxic seed sentences from templates, their
keywords moved into other modalities (emoji, images, speech, video), and the fused test cases
that must stay toxic (the metamorphic relation behind the Error Finding Rate)."""
