"""Module.state_dict / load_state_dict as PyTorch runs them (Note [State dict protocol]): extra
state, the four kinds of hooks, ``_metadata`` versions, ``_load_from_state_dict`` overrides,
``assign=True`` and the 0-dim compatibility rule; each against torch where it is installed."""

from __future__ import annotations

import numpy as np
import pytest

import nn
import tensor


def _with_extra_state(lib_nn):
    class Counter(lib_nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib_nn.Linear(2, 2)
            self.calls = 0

        def get_extra_state(self):
            return {"calls": self.calls}

        def set_extra_state(self, state):
            self.calls = state["calls"]

    return Counter


def _extra_state_story(lib, lib_nn):
    Counter = _with_extra_state(lib_nn)
    a, b = Counter(), Counter()
    a.calls = 7
    state = a.state_dict()
    keys = list(state)
    result = b.load_state_dict(state)
    without = {k: v for k, v in state.items() if k != "_extra_state"}
    missing = b.load_state_dict(without, strict=False).missing_keys
    plain = lib_nn.Linear(2, 2)
    unexpected = plain.load_state_dict({**plain.state_dict(), "_extra_state": 1}, strict=False).unexpected_keys
    return keys, b.calls, repr(result), missing, unexpected


def test_extra_state_round_trips():
    keys, calls, result, missing, unexpected = _extra_state_story(tensor, nn)
    assert keys == ["_extra_state", "lin.weight", "lin.bias"] and calls == 7
    assert result == "<All keys matched successfully>"
    assert missing == ["_extra_state"] and unexpected == ["_extra_state"]


def test_extra_state_as_torch(torch):
    assert _extra_state_story(tensor, nn) == _extra_state_story(torch, torch.nn)


def _hook_story(lib, lib_nn):
    model = lib_nn.Sequential(lib_nn.Linear(2, 2))
    seen = []
    model.register_state_dict_pre_hook(lambda m, prefix, keep_vars: seen.append(("pre", prefix, keep_vars)))

    def rename(m, state, prefix, local_metadata):
        seen.append(("post", prefix, local_metadata["version"]))
        state[prefix + "first.weight"] = state.pop(prefix + "0.weight")

    model.register_state_dict_post_hook(rename)
    state = model.state_dict()

    def rename_back(m, state, prefix, *rest):
        state[prefix + "0.weight"] = state.pop(prefix + "first.weight")

    fresh = lib_nn.Sequential(lib_nn.Linear(2, 2))
    fresh.register_load_state_dict_pre_hook(rename_back)
    fresh.load_state_dict(state)
    same = bool((fresh[0].weight == model[0].weight).all())

    def forgive(m, keys):
        keys.missing_keys.clear()

    lenient = lib_nn.Linear(2, 2)
    handle = lenient.register_load_state_dict_post_hook(forgive)
    lenient.load_state_dict({"weight": lib.ones(2, 2)})  # bias missing, forgiven: no error
    handle.remove()
    with pytest.raises(RuntimeError, match="Missing key"):
        lenient.load_state_dict({"weight": lib.ones(2, 2)})
    return seen, sorted(state), same


def test_hooks():
    seen, keys, same = _hook_story(tensor, nn)
    assert seen == [("pre", "", False), ("post", "", 1)]
    assert keys == ["0.bias", "first.weight"] and same


def test_hooks_as_torch(torch):
    assert _hook_story(tensor, nn) == _hook_story(torch, torch.nn)


def test_metadata_versions_as_torch(torch):
    ours = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.ReLU())).state_dict()._metadata
    theirs = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Sequential(torch.nn.ReLU())).state_dict()._metadata
    assert dict(ours) == dict(theirs)


def test_load_from_state_dict_override_sees_the_saved_version():
    class Renamed(nn.Module):
        _version = 2

        def __init__(self):
            super().__init__()
            self.scale = nn.Parameter(tensor.ones(2))

        def _load_from_state_dict(self, state_dict, prefix, local_metadata, *args):
            if local_metadata.get("version", 1) < 2 and prefix + "old_scale" in state_dict:
                state_dict[prefix + "scale"] = state_dict.pop(prefix + "old_scale")
            super()._load_from_state_dict(state_dict, prefix, local_metadata, *args)

    old = {"m.old_scale": tensor.full((2,), 3.0)}
    old_metadata = {"": {"version": 1}, "m": {"version": 1}}
    holder = nn.Module()
    holder.m = Renamed()
    state = type("State", (dict,), {})(old)
    state._metadata = old_metadata
    holder.load_state_dict(state)
    assert holder.m.scale.tolist() == [3.0, 3.0]
    assert holder.state_dict()._metadata["m"] == {"version": 2}


def test_assign_puts_the_given_tensors_in_place():
    model = nn.Linear(2, 2)
    weight = tensor.full((2, 2), 5.0)
    model.load_state_dict({"weight": weight, "bias": tensor.zeros(2)}, assign=True)
    assert isinstance(model.weight, nn.Parameter) and model.weight.requires_grad
    weight[0, 0] = 9.0  # the parameter shares the given tensor's storage
    assert model.weight[0, 0].item() == 9.0


def test_a_one_element_vector_loads_into_a_scalar():
    module = nn.Module()
    module.register_buffer("step", tensor.tensor(0.0))
    module.load_state_dict({"step": tensor.tensor([4.0])})
    assert module.step.shape == () and module.step.item() == 4.0


def test_checkpoint_wrapper_keys_and_loading_both_ways():
    wrapped = nn.Sequential(nn.utils.checkpoint_wrapper(nn.Linear(2, 2)))
    plain = nn.Sequential(nn.Linear(2, 2))
    assert list(wrapped.state_dict()) == list(plain.state_dict()) == ["0.weight", "0.bias"]
    plain.load_state_dict(wrapped.state_dict())
    source = nn.Sequential(nn.Linear(2, 2))
    wrapped.load_state_dict(source.state_dict())
    np.testing.assert_array_equal(wrapped[0]._checkpoint_wrapped_module.weight.detach().numpy(),
                                  source[0].weight.detach().numpy())


def test_private_state_dict_hook_may_return_a_new_dict():
    from collections import OrderedDict

    m = nn.Linear(2, 2)
    m._register_state_dict_hook(lambda mod, sd, prefix, meta: OrderedDict((k + "_x", v) for k, v in sd.items()))
    assert list(m.state_dict()) == ["weight_x", "bias_x"]


def test_public_hook_return_values_are_refused():
    m = nn.Linear(1, 1)
    m.register_state_dict_post_hook(lambda mod, sd, prefix, meta: {})
    with pytest.raises(RuntimeError, match="state_dict post-hook must return None"):
        m.state_dict()
    m = nn.Linear(1, 1)
    m.register_load_state_dict_post_hook(lambda mod, keys: 5)
    with pytest.raises(AssertionError, match="not expected to return new values"):
        m.load_state_dict(m.state_dict())


def test_private_load_pre_hook_is_called_without_the_module():
    seen = []
    m = nn.Linear(1, 1)
    m._register_load_state_dict_pre_hook(lambda sd, prefix, *rest: seen.append((sorted(sd), prefix, len(rest))))
    m._register_load_state_dict_pre_hook(lambda mod, sd, *rest: seen.append(mod is m), with_module=True)
    m.load_state_dict(m.state_dict())
    assert seen == [(["bias", "weight"], "", 5), True]


def test_dotted_key_under_a_parameter_is_unexpected(torch):
    def load(lib, lib_nn):
        sd = {"weight": lib.ones(1, 1), "bias": lib.ones(1), "weight.x": lib.ones(1)}
        return lib_nn.Linear(1, 1).load_state_dict(sd, strict=False)

    ours, theirs = load(tensor, nn), load(torch, torch.nn)
    assert ours.unexpected_keys == theirs.unexpected_keys == ["weight.x"]
    with pytest.raises(RuntimeError, match='Unexpected key\\(s\\) in state_dict: "weight.x"'):
        nn.Linear(1, 1).load_state_dict({"weight": tensor.ones(1, 1), "bias": tensor.ones(1),
                                         "weight.x": tensor.ones(1)})
