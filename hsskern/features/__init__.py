"""Explicit feature maps (polynomial features on centers for FPC)."""
