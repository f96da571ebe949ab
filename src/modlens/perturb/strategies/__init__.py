"""Perturbation strategies, one small file each; `modlens.perturb.registry` lists them."""
