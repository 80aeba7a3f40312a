"""The seed's eight metrics, computed from the ledger, and the evidence a plan closes with."""
