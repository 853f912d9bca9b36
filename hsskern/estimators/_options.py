"""The ``options=`` parameter of an estimator: one frozen options object of expert knobs.

:class:`OptionsParamsMixin` gives an estimator scikit-learn's nested names for the fields of
its options object (``options__max_rank``, and a nested group's ``options__decomposition__
max_ws``): ``get_params(deep=True)`` lists them (the defaults' when ``options`` is None) and
``set_params`` replaces the object by :meth:`~hsskern.options.OptionsBase.replace`, never
changing it, so ``clone`` and ``GridSearchCV(est, {"options__max_rank": [...]})`` work.
"""
import functools

from ..options import OptionsBase

__all__ = ["OptionsParamsMixin", "default_options"]

_PREFIX = "options__"


@functools.cache
def default_options(options_class):
    """The defaults of ``options_class``, built and checked once: the objects are immutable,
    so every estimator with ``options=None`` may share one (a fit asks for it several times)."""
    return options_class()


class OptionsParamsMixin:
    """Nested ``options__<field>`` names for an estimator with an ``options`` parameter.

    Subclasses set ``_options_class`` (the type and the defaults of ``options=None``).
    """

    _options_class = None

    def _options(self):
        """The options in effect: ``options``, or the defaults when it is None."""
        return default_options(self._options_class) if self.options is None else self.options

    def get_params(self, deep=True):
        out = super().get_params(deep=deep)
        if deep and self.options is None:
            defaults = default_options(self._options_class).get_params()
            out.update((_PREFIX + k, v) for k, v in defaults.items())
        return out

    def set_params(self, **params):
        nested = {name[len(_PREFIX):]: params.pop(name)
                  for name in list(params) if name.startswith(_PREFIX)}
        super().set_params(**params)  # a new options object first, then its fields
        if nested:
            base = self._options()
            if not isinstance(base, OptionsBase):
                raise TypeError(f"options must be a {self._options_class.__name__} or None, "
                                f"got {base!r}")
            unknown = sorted(set(nested) - set(base.get_params(deep=True)))
            if unknown:  # scikit-learn's wording for an unknown parameter
                raise ValueError(f"Invalid parameter {_PREFIX + unknown[0]!r} for estimator "
                                 f"{self!r}. The options' fields are "
                                 f"{list(base.get_params(deep=True))}.")
            self.options = base.replace(**nested)
        return self
