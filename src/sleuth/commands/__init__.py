"""The commands of ``sleuth``, one module per family (registered by :mod:`sleuth.cli`)."""
