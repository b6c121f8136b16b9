"""The resolution's rules: the query's bounds, the algorithm, the binding's value, the
manifest identifier; a recovered manifest signed once per asset."""

from __future__ import annotations

import base64

import pytest

from detector.credentials.manifest import SOFT_BINDING_ALG
from provenance.errors import ProblemError
from provenance.softbinding import services


def test_max_results_and_the_algorithm_are_checked():
    assert services.max_results(None) == 10 and services.max_results("7") == 7
    for bad in ("0", "101", "x"):
        with pytest.raises(ProblemError):
            services.max_results(bad)
    services.check_alg(None, required=False)
    services.check_alg(SOFT_BINDING_ALG, required=True)
    with pytest.raises(ProblemError, match="unsupported"):
        services.check_alg("com.other.1", required=False)
    with pytest.raises(ProblemError):
        services.check_alg(None, required=True)


def test_similarity_follows_the_strength_bands_never_a_p_value():
    assert sorted(services.SIMILARITY.values()) == [25, 50, 75, 90, 100]
    assert services.SIMILARITY[-31] > services.SIMILARITY[-13] > services.SIMILARITY[-1]


@pytest.mark.django_db
def test_binding_values_and_manifest_ids_are_checked():
    with pytest.raises(ProblemError):
        services.matches_by_binding(SOFT_BINDING_ALG, "not base64!", 10)
    unknown = base64.b64encode(b"pk-nobody").decode()
    assert services.matches_by_binding(SOFT_BINDING_ALG, unknown, 10) == []
    with pytest.raises(ProblemError):
        services.manifest_store("not-a-urn")
    assert services.manifest_store("urn:c2pa:00000000-0000-0000-0000-000000000000") is None
