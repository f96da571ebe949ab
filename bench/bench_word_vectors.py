"""How good the offline word vectors (the embedded MiniLM's whole-word input embeddings) are as
a source of synonym swaps, judged by WordNet 3.0.

    python bench/bench_word_vectors.py [--n 300] [--k 5] [--min-similarity 0.5]

Words: the first N content words (not stop words, 3+ letters, known to WordNet as an
adjective, noun or verb) of the embedding vocabulary, i.e. the commonest word pieces. For each,
the top-k neighbours `embedding_neighbour` proposes (inflections skipped, cosine floor applied)
are classed as: synonym (share a synset), related (hypernym/hyponym/similar-to/also-see/
derivational form of one of its synsets, or the same base form), antonym (a WordNet antonym of
one of its lemmas), or other. Prints the shares, the coverage (words with at least one
neighbour above the floor), time per lookup, and a few examples.
"""
from __future__ import annotations

import argparse
import random
import time
from collections import Counter
from itertools import islice

from modlens.perturb import wordnet, wordvectors
from modlens.perturb.importance import STOPWORDS
from modlens.perturb.transformations.embedding_neighbour import EmbeddingNeighbour

EXAMPLES = ("stupid", "idiot", "hate", "ugly", "kill", "good", "trash", "disgusting")


def relations(reader, word: str) -> tuple[set[str], set[str], set[str]]:
    """(synonyms, related forms, antonyms) of `word`, lower-cased lemma names."""
    syn, rel, ant = set(), set(wordnet.base_forms(reader, word)), set()
    for s in reader.synsets(word):
        syn |= {n.lower() for n in s.lemma_names()}
        for other in s.hypernyms() + s.hyponyms() + s.similar_tos() + s.also_sees():
            rel |= {n.lower() for n in other.lemma_names()}
        for lemma in s.lemmas():
            rel |= {d.name().lower() for d in lemma.derivationally_related_forms()}
            ant |= {a.name().lower() for a in lemma.antonyms()}
    return syn, rel, ant


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--min-similarity", type=float, default=0.5)
    args = ap.parse_args()

    t0 = time.perf_counter()
    vectors = wordvectors.load()
    t_vec = time.perf_counter() - t0
    reader = wordnet.load()
    swap = EmbeddingNeighbour(min_similarity=args.min_similarity)
    # the first N that qualify (islice: the rest of the vocabulary is never looked up in WordNet)
    words = list(islice((w for w in vectors.words if len(w) >= 3 and w not in STOPWORDS
                         and wordnet.word_pos(reader, w) & {"a", "n", "v"}), args.n))

    counts: Counter[str] = Counter()
    covered, t_lookup = 0, 0.0
    for w in words:
        t = time.perf_counter()
        found = swap.neighbours(w, args.k)
        t_lookup += time.perf_counter() - t
        covered += bool(found)
        syn, rel, ant = relations(reader, w)
        for n, _ in found:
            base = wordnet.base_forms(reader, n)
            cls = ("antonym" if base & ant else "synonym" if base & syn else "related" if base & rel else "other")
            counts[cls] += 1
    total = sum(counts.values())
    print(f"vectors: {len(vectors.words)} whole words x {vectors.matrix.shape[1]} dims, loaded in {t_vec:.2f} s")
    print(f"{len(words)} words, top-{args.k} neighbours, cosine >= {args.min_similarity}: "
          f"{covered} words ({covered / len(words):.0%}) have at least one; {total} neighbours, "
          f"{t_lookup / len(words) * 1000:.1f} ms per lookup")
    for cls in ("synonym", "related", "antonym", "other"):
        print(f"  {cls:8s} {counts[cls]:5d}  {counts[cls] / max(total, 1):.1%}")
    print("examples:")
    for w in EXAMPLES:
        print(f"  {w}: " + ", ".join(f"{n} {s:.2f}" for n, s in swap.neighbours(w, args.k)))
    random.Random(0).shuffle(words)
    print("random sample:")
    for w in words[:5]:
        print(f"  {w}: " + ", ".join(f"{n} {s:.2f}" for n, s in swap.neighbours(w, args.k)))


if __name__ == "__main__":
    main()
