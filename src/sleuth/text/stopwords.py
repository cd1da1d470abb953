"""Stop words and important short terms (data only)."""

from __future__ import annotations

#: English stop words: the NLTK English list (Bird, Klein & Loper 2009), lowercased and accent-free.
ENGLISH_STOP_WORDS: frozenset[str] = frozenset(
    """
    a about above after again against all am an and any are aren arent as at be because been before
    being below between both but by can couldn couldnt d did didn didnt do does doesn doesnt doing don
    dont down during each few for from further had hadn hadnt has hasn hasnt have haven havent having
    he her here hers herself him himself his how i if in into is isn isnt it its itself just ll m ma me
    mightn mightnt more most mustn mustnt my myself needn neednt no nor not now o of off on once only
    or other our ours ourselves out over own re s same shan shant she shes should shouldn shouldnt
    shouldve so some such t than that thatll the their theirs them themselves then there these they
    this those through to too under until up ve very was wasn wasnt we were weren werent what when
    where which while who whom why will with won wont wouldn wouldnt y you youd youll youre youve your
    yours yourself yourselves
    """.split()
)

#: Terms shorter than ``TERM_MIN_CHARS`` that are kept anyway (the seed's "important short terms").
IMPORTANT_SHORT_TERMS: frozenset[str] = frozenset("c r go ai ml db ui ux os io id ip js ts qa ci cd pr".split())
