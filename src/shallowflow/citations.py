"""What to cite: the BibTeX of the papers a reproduction or a feature rests on, and of the
software (``shallowflow cite [NAME]``; every reproduction's report.md names its keys).

The entries (:data:`ENTRIES`) are data, in one place: the four papers the reproductions follow
(docs/math.md, "Papers"), the landscape papers of Safran and Shamir (the population loss of
Gaussian inputs), MNIST, JAX (the software citation of its README) and shallowflow itself. Which
entries a name rests on is data too: a reproduction by its paper (:data:`PAPERS`, keyed by the
prefix of its name, as the catalogue groups them, plus :data:`EXTRA` for one that also uses a
data set), a feature by :data:`FEATURES`; nothing here imports a reproduction.
"""

from __future__ import annotations

from dataclasses import dataclass

from shallowflow import __version__


@dataclass(frozen=True)
class Entry:
    """One BibTeX entry: its type (``article``, ``inproceedings``, ``misc``, ``software``) and
    its fields, written in that order."""

    kind: str
    fields: tuple[tuple[str, str], ...]

    def render(self, key: str) -> str:
        """``@kind{key, field = {value}, ...}``, one field a line."""
        body = "".join(f"  {name} = {{{value}}},\n" for name, value in self.fields)
        return f"@{self.kind}{{{key},\n{body}}}\n"


ENTRIES: dict[str, Entry] = {
    "shallowflow": Entry("software", (
        ("author", "{The shallowflow contributors}"),
        ("title", "shallowflow: simulate, measure and predict how one-hidden-layer {ReLU} "
                  "networks learn"),
        ("version", __version__),
        ("year", "2026"),
    )),
    "jax2018github": Entry("software", (
        ("author", "James Bradbury and Roy Frostig and Peter Hawkins and Matthew James Johnson "
                   "and Chris Leary and Dougal Maclaurin and George Necula and Adam Paszke and "
                   "Jake Vander{P}las and Skye Wanderman-{M}ilne and Qiao Zhang"),
        ("title", "{JAX}: composable transformations of {P}ython+{N}um{P}y programs"),
        ("url", "http://github.com/jax-ml/jax"),
        ("version", "0.3.13"),
        ("year", "2018"),
    )),
    "dana2025convergence": Entry("inproceedings", (
        ("author", "Dana, L{\\'e}o and Pillaud-Vivien, Loucas and Bach, Francis"),
        ("title", "Convergence of Shallow {ReLU} Networks on Weakly Interacting Data"),
        ("booktitle", "Advances in Neural Information Processing Systems ({NeurIPS})"),
        ("year", "2025"),
        ("eprint", "2502.16977"),
        ("archiveprefix", "arXiv"),
    )),
    "boursier2025early": Entry("article", (
        ("author", "Boursier, Etienne and Flammarion, Nicolas"),
        ("title", "Early Alignment in Two-Layer Networks Training is a Two-Edged Sword"),
        ("journal", "Journal of Machine Learning Research"),
        ("volume", "26"),
        ("number", "183"),
        ("pages", "1--75"),
        ("year", "2025"),
        ("eprint", "2401.10791"),
        ("archiveprefix", "arXiv"),
    )),
    "town2026mildly": Entry("misc", (
        ("author", "Town, J. and Boursier, Etienne and Lewis, B. and Englert, Matthias and "
                   "Lazi{\\'c}, Ranko"),
        ("title", "Mildly Overparameterized {ReLU} Networks on Orthogonal Data: Incremental "
                  "Learning and Implicit Bias"),
        ("year", "2026"),
        ("eprint", "2605.27097"),
        ("archiveprefix", "arXiv"),
        ("primaryclass", "cs.LG"),
    )),
    "min2024early": Entry("inproceedings", (
        ("author", "Min, Hancheng and Mallada, Enrique and Vidal, Ren{\\'e}"),
        ("title", "Early Neuron Alignment in Two-layer {ReLU} Networks with Small "
                  "Initialization"),
        ("booktitle", "The Twelfth International Conference on Learning Representations "
                      "({ICLR})"),
        ("year", "2024"),
        ("eprint", "2307.12851"),
        ("archiveprefix", "arXiv"),
    )),
    "safran2018spurious": Entry("inproceedings", (
        ("author", "Safran, Itay and Shamir, Ohad"),
        ("title", "Spurious Local Minima are Common in Two-Layer {ReLU} Neural Networks"),
        ("booktitle", "Proceedings of the 35th International Conference on Machine Learning "
                      "({ICML})"),
        ("series", "Proceedings of Machine Learning Research"),
        ("volume", "80"),
        ("pages", "4433--4441"),
        ("year", "2018"),
    )),
    "safran2021effects": Entry("inproceedings", (
        ("author", "Safran, Itay and Yehudai, Gilad and Shamir, Ohad"),
        ("title", "The Effects of Mild Over-parameterization on the Optimization Landscape of "
                  "Shallow {ReLU} Neural Networks"),
        ("booktitle", "Proceedings of the Thirty Fourth Conference on Learning Theory ({COLT})"),
        ("series", "Proceedings of Machine Learning Research"),
        ("volume", "134"),
        ("pages", "3889--3934"),
        ("year", "2021"),
    )),
    "lecun1998gradient": Entry("article", (
        ("author", "LeCun, Yann and Bottou, L{\\'e}on and Bengio, Yoshua and Haffner, Patrick"),
        ("title", "Gradient-based learning applied to document recognition"),
        ("journal", "Proceedings of the IEEE"),
        ("volume", "86"),
        ("number", "11"),
        ("pages", "2278--2324"),
        ("year", "1998"),
    )),
}
"""Every entry by its BibTeX key."""

SOFTWARE = ("shallowflow", "jax2018github")
"""What every use of shallowflow rests on: shallowflow and JAX."""

PAPERS: dict[str, tuple[str, ...]] = {
    "dana": ("dana2025convergence",),
    "bf": ("boursier2025early",),
    "town": ("town2026mildly",),
    "mmv": ("min2024early",),
    "safran": ("safran2018spurious", "safran2021effects"),
    "population": ("safran2018spurious", "safran2021effects"),
}
"""The paper a reproduction follows, by the prefix of its name (``dana-fig2`` -> ``dana``); a
prefix of no paper (a user's own reproduction) rests on the software alone."""

EXTRA: dict[str, tuple[str, ...]] = {
    "mmv-fig5": ("lecun1998gradient",),
    "mmv-fig10": ("lecun1998gradient",),
    "mmv-fig11": ("lecun1998gradient",),
    "mmv-fig12": ("lecun1998gradient",),
}
"""What a reproduction rests on beyond its paper (the MNIST digit pairs: the data set)."""

FEATURES: dict[str, tuple[str, tuple[str, ...]]] = {
    "mnist": ("the embedded MNIST subset (data kind mnist)", ("lecun1998gradient",)),
    "limit-process": ("the saddle-to-saddle limit process, Algorithm 1 (docs/math.md §3.4)",
                      ("town2026mildly",)),
    "population": ("the population loss of Gaussian inputs, teacher-student (data kind "
                   "gaussian_teacher, docs/math.md §11)", ("safran2018spurious", "safran2021effects")),
}
"""A feature a user may cite by name (``shallowflow cite mnist``): what it is, and its keys."""


def reproduction_keys(name: str) -> tuple[str, ...]:
    """The entries reproduction ``name`` rests on beyond the software: its paper (by the
    prefix of its name) and :data:`EXTRA`; none for a prefix of no paper.

    >>> reproduction_keys("mmv-fig5")
    ('min2024early', 'lecun1998gradient')
    >>> reproduction_keys("my-own-figure")
    ()
    """
    return PAPERS.get(name.split("-")[0], ()) + EXTRA.get(name, ())


def keys_for(name: str | None) -> tuple[str, ...]:
    """What ``shallowflow cite [NAME]`` prints: :data:`SOFTWARE`, then the entries of feature
    ``name`` or of reproduction ``name`` (:func:`reproduction_keys`), each once; ``"all"``
    gives every entry."""
    if name == "all":
        return tuple(ENTRIES)
    extra: tuple[str, ...] = ()
    if name in FEATURES:
        extra = FEATURES[name][1]
    elif name is not None:
        extra = reproduction_keys(name)
    return tuple(dict.fromkeys(SOFTWARE + extra))


def bibtex(keys: tuple[str, ...]) -> str:
    """The BibTeX of ``keys``, entries separated by a blank line."""
    return "\n".join(ENTRIES[k].render(k) for k in keys)
