"""scikit-learn estimators, one per backend."""
