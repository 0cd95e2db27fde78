"""Test support shared by tests/, e2e/ and bench/: clients and fakes of the real parts (not shipped)."""
