"""``nn.utils.stateless``: ``functional_call``, as ``torch.nn.utils.stateless`` (deprecated there in
favour of ``torch.func.functional_call``, which it is here: ``tensor.func.functional_call``)."""

from tensor.func import functional_call

__all__ = ["functional_call"]
