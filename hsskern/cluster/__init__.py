"""Cluster tree over the points and (approximate) nearest neighbours, for HSS compression."""
