# cython: auto_pickle=False
"""TensorBase: the fields every Tensor has, C struct fields when compiled.

Note [Compiled Tensor fields]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
``Tensor`` (tensor/_tensor.py) derives from ``TensorBase``. Plain Python, ``TensorBase`` is an
ordinary class and ``FIELDS``' defaults are its class attributes, as they were Tensor's: a new
tensor sets only ``_data``, ``_device`` and ``_version_box`` in its ``__dict__``. Compiled (Note
[Compiled dispatch and graph] in tensor/_accelerator.py), ``_tensor_base.pxd`` makes it an
extension type whose fields are C struct fields: the dispatcher and the recorder, which declare
their tensors as ``TensorBase``, read and write them as C struct accesses instead of attribute
lookups. Everything else reads them as attributes: ``_member_slots`` replaces the
properties Cython would generate by member descriptors (what ``__slots__`` makes), which
CPython's specialising interpreter reads and writes as fast as an instance's ``__dict__``
(a property would cost a call). The ``__dict__`` stays for any other attribute (a Buffer's
``persistent``, a user's attributes), and ``__weakref__`` for weak references, so subclasses
(Parameter, Buffer, users'), pickling, ``copy`` and ``__class__`` assignment work as before.

What differs compiled: a tensor made without ``Tensor.__new__`` must come from
``TensorBase.__new__(cls)`` (an extension type refuses ``object.__new__``); a subclass must not
give a field a class attribute (it would hide the field); and ``_data``, ``_device`` and
``_version_box`` read None, not AttributeError, on a tensor that never set them. Deleting a field
gives it back its default (``del t.grad`` makes grad None, as in PyTorch), through a
``__delattr__``: compiled code reads fields without a NULL check, so none may be left empty.
That costs interpreted code its specialised attribute stores on tensors (CPython specialises
them only for the generic ``tp_setattro``), which are rare outside the compiled hot paths.
"""

_COMPILED = not __file__.endswith(".py")

# Every field in the order of _tensor_base.pxd's declaration, with its default.
FIELDS = (
    ("_data", None),
    ("_device", None),
    ("_version_box", None),  # {0: version} (or [version]), shared by views of one storage
    ("_requires_grad", False),
    ("_grad_fn", None),
    ("_output_nr", 0),
    ("_base", None),
    ("_view_src", None),
    ("_grad_version", None),  # for a recorded view: the version its _grad_fn was derived at
    ("_hooks", None),
    ("_post_accumulate_hooks", None),
    ("_retains_grad", False),
    ("_is_inference", False),
    ("_saved_by_reference", False),  # autograd.graph.save_by_reference
    ("grad", None),
)


class TensorBase:
    """The fields of a Tensor (Note [Compiled Tensor fields]); not used on its own."""

    def __cinit__(self, *args, **kwargs):
        # Compiled only: C fields start as None, so the other defaults are set here (plain
        # Python never calls __cinit__; its defaults are class attributes).
        self._requires_grad = False
        self._output_nr = 0
        self._retains_grad = False
        self._is_inference = False
        self._saved_by_reference = False

    def __setattr__(self, name, value):
        # Compiled only (plain Python uses the ``grad`` property below): one generic store,
        # checked first when it assigns a gradient (compiled code writes the C field itself).
        if name == "grad" and value is not None:
            check_assigned_grad(self, value)
        _generic_setattr(self, name, value)  # noqa: F821 (C, in _tensor_base.pxd)

    def __delattr__(self, name):
        # Compiled only (plain Python drops it below: its fields live in the __dict__ and fall
        # back to the class defaults). A member descriptor would leave a deleted field NULL,
        # which compiled code reads without a check: the field gets its default back instead,
        # as PyTorch's ``del t.grad`` makes grad None.
        _generic_setattr(self, name, _DEFAULTS[name]) if name in _DEFAULTS else _generic_delattr(self, name)  # noqa: F821


def check_assigned_grad(tensor, grad) -> None:
    """Check ``grad`` (not None) as a gradient assigned to ``tensor.grad``, as PyTorch does.

    Raises TypeError when it is not a tensor, RuntimeError when it is ``tensor`` itself or
    differs from ``tensor`` in size, dtype or device (an optimizer would otherwise broadcast
    a wrongly shaped gradient into the parameter silently).
    """
    if not isinstance(grad, TensorBase):
        raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type {type(grad).__name__}")
    a, b = grad._data, tensor._data
    if grad._device is tensor._device and a is not None and b is not None and a is not b:  # (a is b: maybe t itself)
        if a.shape == b.shape and a.dtype == b.dtype:
            return
    if grad is tensor:
        raise RuntimeError("can't assign Variable as its own grad")
    if grad.shape != tensor.shape:
        raise RuntimeError(
            f"attempting to assign a gradient of size '{list(grad.shape)}' to a tensor of size "
            f"'{list(tensor.shape)}'. Please ensure that the gradient and the tensor are the same size"
        )
    if grad.dtype != tensor.dtype:
        raise RuntimeError(
            f"attempting to assign a gradient with dtype '{grad.dtype}' to a tensor with dtype '{tensor.dtype}'"
        )
    if grad.device != tensor.device:
        raise RuntimeError(
            f"attempting to assign a gradient on device '{grad.device}' to a tensor on device '{tensor.device}'"
        )


def _get_grad(self):
    return self.__dict__.get("_grad")


def _set_grad(self, value):
    if value is not None:
        check_assigned_grad(self, value)
    self.__dict__["_grad"] = value


def _del_grad(self):
    self.__dict__.pop("_grad", None)


_DEFAULTS = dict(FIELDS)
if _COMPILED:
    _member_slots(TensorBase, tuple([name for name, _ in FIELDS]))  # noqa: F821 (C, in _tensor_base.pxd)
    _check_fields(tuple([name for name, _ in FIELDS]))  # noqa: F821
else:
    del TensorBase.__delattr__, TensorBase.__setattr__
    for _name, _default in FIELDS[3:-1]:  # no default for the three fields every tensor sets
        setattr(TensorBase, _name, _default)
    TensorBase.grad = property(_get_grad, _set_grad, _del_grad, "The gradient accumulated by backward, or None.")
