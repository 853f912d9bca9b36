"""The ``options=`` parameter of an estimator: one frozen options object of expert knobs.

:class:`OptionsParamsMixin` gives an estimator scikit-learn's nested names for the fields of
its options object (``options__max_rank``): ``get_params(deep=True)`` lists them (the
defaults' when ``options`` is None) and ``set_params`` replaces the object by
:meth:`~hsskern.options.OptionsBase.replace`, never changing it, so ``clone`` and
``GridSearchCV(est, {"options__max_rank": [...]})`` work. The fields that were flat
parameters before (``rel_tol=``, ``refine=``, ...) are still taken, by ``__init__``'s
``**legacy`` and by ``set_params``, with a ``FutureWarning``, for one release.
"""
import functools
import warnings

from ..options import OptionsBase
from ..utils._deprecation import caller_stacklevel

__all__ = ["OptionsParamsMixin", "default_options", "fold_legacy", "legacy_init"]

_PREFIX = "options__"


@functools.cache
def default_options(options_class):
    """The defaults of ``options_class``, built and checked once: the objects are immutable,
    so every estimator with ``options=None`` may share one (a fit asks for it several times)."""
    return options_class()


def _warn_legacy(cls, names):
    names = sorted(names)
    renamed = cls._options_class.renamed_fields()  # a flat name whose field was renamed
    spelled = ", ".join(f"{n}=" for n in names)
    fields = ", ".join(f"{renamed.get(n, n)}=" for n in names)
    nested = ", ".join(f"options__{renamed.get(n, n)}=" for n in names)
    warnings.warn(f"{cls.__name__}({spelled}...) is deprecated and will be removed in the next "
                  f"release: {'it is a field' if len(names) == 1 else 'they are fields'} of "
                  f"the options object now; pass options={cls._options_class.__name__}"
                  f"({fields}...), or set_params({nested}...)", FutureWarning,
                  stacklevel=caller_stacklevel())


def fold_legacy(cls, options, legacy):
    """``options`` with the old flat parameters ``legacy`` folded in (a FutureWarning), for
    an estimator class ``cls`` with ``_options_class`` and ``_legacy_names``; an unknown
    name is the TypeError Python gives an unexpected keyword."""
    if not legacy:
        return options
    unknown = sorted(set(legacy) - set(cls._legacy_names))
    if unknown:
        raise TypeError(f"{cls.__name__}.__init__() got an unexpected keyword argument "
                        f"{unknown[0]!r}")
    _warn_legacy(cls, legacy)
    base = default_options(cls._options_class) if options is None else options
    if not isinstance(base, OptionsBase):
        raise TypeError(f"options must be a {cls._options_class.__name__} or None, got "
                        f"{options!r}")
    renamed = cls._options_class.renamed_fields()
    return base.replace(**{renamed.get(k, k): v for k, v in legacy.items()})


class OptionsParamsMixin:
    """Nested ``options__<field>`` names for an estimator with an ``options`` parameter.

    Subclasses set ``_options_class`` (the type and the defaults of ``options=None``) and
    ``_legacy_names`` (the old flat parameters that are now its fields).
    """

    _options_class = None
    _legacy_names = ()

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
        nested, legacy = {}, {}
        for name in list(params):
            if name.startswith(_PREFIX):
                nested[name[len(_PREFIX):]] = params.pop(name)
            elif name in self._legacy_names:
                legacy[name] = params.pop(name)
        if legacy:
            _warn_legacy(type(self), legacy)
            renamed = self._options_class.renamed_fields()
            legacy = {renamed.get(k, k): v for k, v in legacy.items()}
        nested = self._options_class.translate(nested)  # options__<old name>: a warning
        super().set_params(**params)  # a new options object first, then its fields
        changes = {**legacy, **nested}
        if changes:
            base = self._options()
            if not isinstance(base, OptionsBase):
                raise TypeError(f"options must be a {self._options_class.__name__} or None, "
                                f"got {base!r}")
            unknown = sorted(set(changes) - set(base.field_names()))
            if unknown:  # scikit-learn's wording for an unknown parameter
                raise ValueError(f"Invalid parameter {_PREFIX + unknown[0]!r} for estimator "
                                 f"{self!r}. The options' fields are "
                                 f"{list(base.field_names())}.")
            self.options = base.replace(**changes)
        return self


def legacy_init(init=None, *, positional="kernel"):
    """``__init__`` that also takes the old spellings for one release, with a FutureWarning:
    the flat parameters that are now fields of ``options`` (the class's ``_legacy_names``,
    folded into ``options``), and the one parameter once given by position
    (``positional``; None: none). ``inspect.signature`` (so scikit-learn's ``get_params``
    and checks) sees ``init``'s own signature, without them."""
    if init is None:
        return functools.partial(legacy_init, positional=positional)

    @functools.wraps(init)
    def wrapper(self, *args, **kwargs):
        if args and positional is None:  # positional parameters of init's own signature
            return _init_folding(self, init, args, kwargs)
        if args:
            if len(args) > 1 or positional in kwargs:
                raise TypeError(f"{type(self).__name__}() takes its parameters by keyword")
            warnings.warn(f"{type(self).__name__}({args[0]!r}): {positional} by position is "
                          f"deprecated and will be a TypeError in the next release; write "
                          f"{positional}={args[0]!r}", FutureWarning,
                          stacklevel=caller_stacklevel())
            kwargs[positional] = args[0]
        return _init_folding(self, init, (), kwargs)

    return wrapper


def _init_folding(est, init, args, kwargs):
    """``init(est, *args, **kwargs)`` with the old flat parameters among ``kwargs`` folded
    into ``est.options`` afterwards."""
    names = type(est)._legacy_names
    legacy = {k: kwargs.pop(k) for k in list(kwargs) if k in names}
    init(est, *args, **kwargs)
    if legacy:
        est.options = fold_legacy(type(est), est.options, legacy)
