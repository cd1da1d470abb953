from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sleuth.lanes.feedback import rm3_weights


def test_hand_computed_rm3():
    query = [("wing", 2), ("flutter", 1)]
    feedback = [(3.0, ["wing", "flutter", "panel", "panel"]), (1.0, ["wing", "tail"])]
    got = dict(rm3_weights(query, feedback, fb_terms=2, original_weight=0.5))
    # P(w|R) ∝ Σ_d tf/|d| · score/Σscore: wing 1/4·3/4 + 1/2·1/4 = 5/16, panel 2/4·3/4 = 6/16,
    # flutter 1/4·3/4 = 3/16, tail 1/2·1/4 = 2/16. Top 2: panel 6/11, wing 5/11 (renormalised).
    assert set(got) == {"wing", "flutter", "panel"}
    assert math.isclose(got["wing"], 0.5 * 2 / 3 + 0.5 * 5 / 11)
    assert math.isclose(got["flutter"], 0.5 * 1 / 3)
    assert math.isclose(got["panel"], 0.5 * 6 / 11)


def test_query_terms_first_then_expansion_by_weight():
    query = [("b", 1), ("a", 1)]
    feedback = [(1.0, ["x", "x", "x", "y", "y", "z", "w", "b", "b"])]
    # P(w|R): x 3/9, b 2/9, y 2/9, w 1/9, z 1/9; the top 4 (ties by term: w before z)
    terms = [t for t, _ in rm3_weights(query, feedback, fb_terms=4)]
    assert terms == ["b", "a", "x", "y", "w"]


def test_no_feedback_keeps_the_query_model():
    assert rm3_weights([("a", 3), ("b", 1)], []) == [("a", 0.75), ("b", 0.25)]
    assert rm3_weights([("a", 3), ("b", 1)], [(0.0, ["c"])]) == [("a", 0.75), ("b", 0.25)]
    assert rm3_weights([("a", 1)], [(1.0, ["c"])], fb_terms=0) == [("a", 1.0)]


def test_original_weight_one_ignores_feedback_and_zero_keeps_only_it():
    feedback = [(2.0, ["c", "d"])]
    assert rm3_weights([("a", 1)], feedback, original_weight=1.0) == [("a", 1.0)]
    assert dict(rm3_weights([("a", 1)], feedback, original_weight=0.0)) == {"c": 0.5, "d": 0.5}


@pytest.mark.parametrize("kwargs", [{"original_weight": -0.1}, {"original_weight": 1.5}, {"fb_terms": -1}])
def test_bad_settings_raise(kwargs):
    with pytest.raises(ValueError):
        rm3_weights([("a", 1)], [], **kwargs)


words = st.sampled_from(["a", "b", "c", "d", "e", "f", "g"])


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(words, st.integers(1, 4), min_size=1),
       st.lists(st.tuples(st.floats(0.01, 20), st.lists(words, min_size=1, max_size=12)), max_size=6),
       st.integers(0, 8), st.floats(0, 1))
def test_property_weights_sum_to_one_and_order_independent(query, feedback, fb_terms, lam):
    got = rm3_weights(list(query.items()), feedback, fb_terms, lam)
    assert math.isclose(sum(w for _, w in got), 1.0)
    assert all(w >= 0 for _, w in got)
    assert len({t for t, _ in got}) == len(got)
    assert len(got) <= len(query) + fb_terms
    # the feedback blocks' order does not matter
    again = dict(rm3_weights(list(query.items()), list(reversed(feedback)), fb_terms, lam))
    for t, w in got:
        assert math.isclose(again[t], w, abs_tol=1e-12)


def _rm3_by_sorting_every_term(query, feedback, fb_terms, lam):
    """The relevance model as the formula reads (every term's parts summed, every term sorted): what
    ``rm3_weights`` computes with fewer steps (issue 16 item 6: the rm3 lane's CPU per query)."""
    from collections import Counter

    from sleuth.lanes.feedback import _normalised
    total_qtf = sum(n for _, n in query)
    docs = [(s, terms) for s, terms in feedback if s > 0 and terms]
    if not docs or fb_terms == 0 or lam == 1.0:
        return _normalised({t: n / total_qtf for t, n in query}, [t for t, _ in query])
    weights = {t: lam * n / total_qtf for t, n in query}
    total_score = math.fsum(s for s, _ in docs)
    parts: dict[str, list[float]] = {}
    for s, terms in docs:
        for term, tf in Counter(terms).items():
            parts.setdefault(term, []).append((tf / len(terms)) * (s / total_score))
    relevance = {term: math.fsum(p) for term, p in parts.items()}
    top = sorted(relevance.items(), key=lambda kv: (-kv[1], kv[0]))[:fb_terms]
    mass = math.fsum(p for _, p in top)
    for term, p in top:
        weights[term] = weights.get(term, 0.0) + (1.0 - lam) * p / mass
    return _normalised(weights, [t for t, _ in query])


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(words, st.integers(1, 4), min_size=1),
       st.lists(st.tuples(st.sampled_from([0.5, 1.0, 2.0, 3.7]) | st.floats(0.01, 20),
                          st.lists(words, min_size=1, max_size=12)), max_size=8),
       st.integers(0, 8), st.sampled_from([0.0, 0.5, 0.7, 1.0]) | st.floats(0, 1))
def test_property_equal_to_the_formula_bit_for_bit(query, feedback, fb_terms, lam):
    # equal scores (repeated blocks, equal first-round scores) make ties at the cut: kept by term
    assert rm3_weights(list(query.items()), feedback, fb_terms, lam) == _rm3_by_sorting_every_term(
        list(query.items()), feedback, fb_terms, lam)
