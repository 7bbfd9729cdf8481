"""The forms machinery on demand: modules that may ask with a form name it here, and it loads with the first use.

A stdio server whose tools never ask a question (or ask only URL steps, sampling or roots)
does not need :mod:`minimcp.forms` and its parts (the field vocabulary, the type compiler,
the schema parser, the answer checks, the shape cache): about 5 ms of an embedding
process's start. The modules on the serving path (:mod:`minimcp.asking`,
:mod:`minimcp.tools`, :mod:`minimcp.outcome`) import ``forms`` / ``form_cache`` from here
instead of from the package; each name stands for its module and loads it at its first
attribute read (a form compiled, a form question asked, ``@app.tool(forms=...)``).

Every read goes to the loaded module (nothing is copied), so a replaced attribute is seen.
The first read that loads it (or finds it loaded) also rebinds the reader's global name to
the module itself: from then on that module's reads are plain module lookups, as if it had
imported the module directly (nothing of this module is left on a call's path).
One exception keeps a failing tool from loading the machinery: before the form vocabulary
(:mod:`minimcp.form_fields`) is loaded, no form error can exist, so reading
``forms.FormDefinitionError`` (or another form error) gives ``()`` instead of loading the
modules: in an ``except`` clause (or ``isinstance``) an empty tuple matches nothing.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

__all__ = ["OnDemand", "form_cache", "forms"]

#: Where the form errors are defined: until it is loaded, none can have been raised.
_ERRORS_MODULE = "minimcp.form_fields"
_ERRORS = frozenset({"FormDefinitionError", "FormValidationError", "SensitiveFieldError"})


class OnDemand:
    """A module imported at the first read of one of its attributes; every read goes to that module."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        module = sys.modules.get(self._name)
        if module is None:
            if attr in _ERRORS and _ERRORS_MODULE not in sys.modules:
                return ()  # matches no exception, as no form error can exist yet
            module = importlib.import_module(self._name)
        namespace = sys._getframe(1).f_globals  # the reading module's globals
        for key in [key for key, value in namespace.items() if value is self]:
            namespace[key] = module
        return getattr(module, attr)

    def __repr__(self) -> str:
        return f"<{self._name}, loaded on first use>"


if TYPE_CHECKING:
    from minimcp import form_cache as form_cache
    from minimcp import forms as forms
else:
    forms = OnDemand("minimcp.forms")
    form_cache = OnDemand("minimcp.form_cache")
