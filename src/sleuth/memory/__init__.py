"""Project memory: the ``project_memory_search`` request, its execution, budgets and records."""
