"""Solvers: plain functions over factors or feature matrices, returning result objects."""
