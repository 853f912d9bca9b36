"""Small helpers shared by every backend: validation, memory estimates, progress."""
