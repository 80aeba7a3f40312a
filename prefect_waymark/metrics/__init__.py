"""The seed's eight metrics, computed from the ledger, and the evidence a plan closes with."""

from .compute import METRIC_NAMES, SCHEMA_VERSION, compute_metrics, metric_values

__all__ = ["METRIC_NAMES", "SCHEMA_VERSION", "compute_metrics", "metric_values"]
