"""Cluster tree over the points and (approximate) nearest neighbours, for HSS compression."""
from .neighbors import knn
from .tree import ClusterTree, build_cluster_tree

__all__ = ["knn", "ClusterTree", "build_cluster_tree"]
