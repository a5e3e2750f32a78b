"""Fusing the vector and keyword rankings: min-max and z-score normalisation, and absolute scores."""

import pytest

from retrieval.fusion import absolute_fusion, score_fusion, zscore_fusion
from retrieval.stores.base import VectorHit


def hits(**scores):
    return [VectorHit(chunk_id=c, score=s) for c, s in sorted(scores.items(), key=lambda kv: -kv[1])]


def test_zscore_puts_each_list_on_its_own_spread():
    vector = hits(a=0.9, b=0.5, c=0.1)  # mean 0.5, deviation ~0.327
    fused = zscore_fusion([vector], [1.0])
    assert fused["a"] == pytest.approx(1.2247, abs=1e-4)
    assert fused["b"] == pytest.approx(0.0)
    assert fused["c"] == pytest.approx(-1.2247, abs=1e-4)


def test_a_hit_missing_from_a_list_counts_as_that_list_last():
    vector = hits(a=0.9, b=0.5, c=0.1)
    keyword = hits(a=0.8, d=0.2)
    fused = zscore_fusion([vector, keyword], [1.0, 1.0])
    alone = zscore_fusion([keyword], [1.0])
    assert fused["b"] == pytest.approx(zscore_fusion([vector], [1.0])["b"] + alone["d"])
    assert fused["d"] == pytest.approx(zscore_fusion([vector], [1.0])["c"] + alone["d"])


def test_a_list_of_equal_scores_gives_its_hits_full_weight_like_min_max():
    flat = hits(a=0.5, b=0.5)
    assert zscore_fusion([flat], [0.6]) == score_fusion([flat], [0.6]) == {"a": 0.6, "b": 0.6}
    assert zscore_fusion([[], flat], [0.4, 0.6]) == {"a": 0.6, "b": 0.6}


def test_search_accepts_zscore_and_refuses_an_unknown_fusion():
    from retrieval.services import SearchParams

    assert SearchParams(fusion="zscore").fusion == "zscore"
    with pytest.raises(ValueError, match="fusion"):
        SearchParams(fusion="zscores")


def test_absolute_adds_the_scores_as_they_are():
    vector = hits(a=0.6, b=0.5, c=-0.2)
    keyword = hits(b=0.3, d=0.1)
    fused = absolute_fusion([vector, keyword], [0.4, 0.6])
    # a negative cosine counts 0, and a hit missing from a list counts 0 there
    assert fused == pytest.approx({"a": 0.24, "b": 0.38, "c": 0.0, "d": 0.06})


def test_absolute_keeps_a_weak_keyword_match_weak_where_min_max_stretches_it():
    vector = hits(a=0.70, b=0.50)
    keyword = hits(b=0.05, a=0.01)  # both barely match the query's terms
    assert max(absolute_fusion([vector, keyword], [0.4, 0.6]).items(), key=lambda kv: kv[1])[0] == "a"
    assert max(score_fusion([vector, keyword], [0.4, 0.6]).items(), key=lambda kv: kv[1])[0] == "b"
