"""Bundled data sets and loaders."""
