"""The example methods' registry entries: one ``register`` call each, as in
``refimpl/experiments/methods.py``, with the plot family and colour chapter 8
reads (``Method.family`` and ``Method.color``)."""

from refimpl.estimators.pairwise_logistic_l2 import PairwiseLogisticL2
from refimpl.estimators.pairwise_ridge_tron import PairwiseRidgeTron
from refimpl.experiments import Method, register

register(Method(
    name="toy-logistic-fista", factory=PairwiseLogisticL2,
    grid={"C": [0.1, 1.0, 10.0]}, reduced_grid={"C": [1.0, 10.0]},
    selection_metric="NDCG@10", linear=True, paper="burges2010ranknet",
    grid_source="CONTRIBUTING.md's example: three decades of C, selected by NDCG@10",
    description="pairwise logistic loss + l2, FISTA (first-order example)",
    family="Worked example", color="#E69F00",
))
register(Method(
    name="toy-ridge-tron", factory=PairwiseRidgeTron,
    grid={"C": [0.1, 1.0, 10.0]}, reduced_grid={"C": [1.0, 10.0]},
    selection_metric="NDCG@10", linear=True, paper="lin2008trust",
    grid_source="CONTRIBUTING.md's example: three decades of C, selected by NDCG@10",
    description="pairwise squared loss + l2, TRON (second-order example)",
    family="Worked example", color="#56B4E9",
))
