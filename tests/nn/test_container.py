"""Containers: Sequential (positional and OrderedDict, indexing, slicing, len, append, insert,
extend, pop, del, +), ModuleList (with PyTorch's compressed repr), ModuleDict, ParameterList
and ParameterDict: registration, iteration order, state_dict keys, repr against torch, errors."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest

import nn
import tensor
from tests.helpers import assert_close
from tests.nn.oracle import copy_state


def _mlp():
    return nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))


def test_sequential_forward_matches_torch(torch):
    ours = _mlp()
    theirs = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
    copy_state(ours, theirs, torch)
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    assert_close(ours(tensor.tensor(x)), theirs(torch.from_numpy(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())


def test_sequential_from_ordered_dict(torch):
    ours = nn.Sequential(OrderedDict([("fc", nn.Linear(2, 2)), ("act", nn.Tanh())]))
    theirs = torch.nn.Sequential(OrderedDict([("fc", torch.nn.Linear(2, 2)), ("act", torch.nn.Tanh())]))
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == ["fc.weight", "fc.bias"]
    assert ours.fc is ours[0] and ours.act is ours[-1]


def test_sequential_indexing_slicing_and_mutation():
    seq = _mlp()
    first, relu, last = list(seq)
    assert len(seq) == 3 and seq[0] is first and seq[-1] is last
    head = seq[:2]
    assert isinstance(head, nn.Sequential) and list(head) == [first, relu]
    assert list(head._modules) == ["0", "1"]
    assert list(seq[::2]._modules) == ["0", "2"]
    seq[1] = nn.Tanh()
    assert isinstance(seq[1], nn.Tanh)
    seq.append(nn.Sigmoid())
    assert len(seq) == 4 and list(seq._modules) == ["0", "1", "2", "3"]
    del seq[1]
    assert list(seq._modules) == ["0", "1", "2"] and seq[1] is last
    seq.insert(0, nn.Identity())
    assert isinstance(seq[0], nn.Identity) and seq[1] is first
    popped = seq.pop(0)
    assert isinstance(popped, nn.Identity) and len(seq) == 3
    seq.extend([nn.ReLU()])
    assert len(seq) == 4
    combined = seq + nn.Sequential(nn.Tanh())
    assert len(combined) == 5 and len(seq) == 4
    del seq[1:]
    assert list(seq) == [first]


def test_empty_sequential_is_identity_and_reprs_like_torch(torch):
    x = tensor.ones(2)
    assert nn.Sequential()(x) is x
    assert repr(nn.Sequential()) == repr(torch.nn.Sequential()) == "Sequential()"


def test_nested_repr_matches_torch(torch):
    ours = nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.ReLU(), nn.Dropout(0.1)), nn.ModuleList([nn.Tanh()]))
    theirs = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.Sequential(torch.nn.ReLU(), torch.nn.Dropout(0.1)),
                                 torch.nn.ModuleList([torch.nn.Tanh()]))
    assert repr(ours) == repr(theirs)


def test_module_list(torch):
    layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    assert len(layers) == 3 and len(list(layers.parameters())) == 6
    layers.append(nn.ReLU())
    layers.extend([nn.Tanh(), nn.Tanh()])
    layers.insert(1, nn.Sigmoid())
    assert [type(m).__name__ for m in layers] == ["Linear", "Sigmoid", "Linear", "Linear", "ReLU", "Tanh", "Tanh"]
    assert list(layers._modules) == [str(i) for i in range(7)]
    assert isinstance(layers[1:3], nn.ModuleList) and len(layers[1:3]) == 2
    del layers[0]
    assert isinstance(layers[0], nn.Sigmoid) and list(layers._modules)[-1] == "5"
    layers[0] = nn.Identity()
    assert isinstance(layers[0], nn.Identity)
    assert isinstance(layers.pop(-1), nn.Tanh) and len(layers) == 5
    layers += [nn.ReLU()]
    assert len(layers) == 6 and len(layers + nn.ModuleList([nn.ReLU()])) == 7
    with pytest.raises(NotImplementedError, match=r'Module \[ModuleList\] is missing the required "forward"'):
        layers(tensor.ones(2))


def test_module_list_repr_compresses_repeats_like_torch(torch):
    ours = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2), nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 2)])
    theirs = torch.nn.ModuleList([torch.nn.Linear(2, 2), torch.nn.Linear(2, 2), torch.nn.Linear(2, 2),
                                  torch.nn.ReLU(), torch.nn.Linear(2, 2)])
    assert repr(ours) == repr(theirs)
    assert repr(nn.ModuleList()) == repr(torch.nn.ModuleList())


def test_module_dict(torch):
    d = nn.ModuleDict({"a": nn.Linear(2, 2), "b": nn.ReLU()})
    assert list(d.keys()) == ["a", "b"] and "a" in d and len(d) == 2
    d["c"] = nn.Tanh()
    d.update([("d", nn.Sigmoid())])
    assert list(d) == ["a", "b", "c", "d"]
    assert isinstance(d.pop("b"), nn.ReLU) and "b" not in d
    assert [k for k, _ in d.items()] == ["a", "c", "d"] and len(list(d.values())) == 3
    assert list(d.state_dict()) == ["a.weight", "a.bias"]
    theirs = torch.nn.ModuleDict({"a": torch.nn.Linear(2, 2), "c": torch.nn.Tanh(), "d": torch.nn.Sigmoid()})
    assert repr(d) == repr(theirs)
    del d["a"]
    d.clear()
    assert len(d) == 0


def test_parameter_list(torch):
    plist = nn.ParameterList([nn.Parameter(tensor.ones(2, 3)), tensor.zeros(4)])
    assert all(isinstance(p, nn.Parameter) for p in plist)
    assert len(plist) == 2 and [n for n, _ in plist.named_parameters()] == ["0", "1"]
    plist.append(tensor.ones(1))
    plist.extend([tensor.ones(2)])
    assert len(plist) == 4 and plist[-1].shape == (2,)
    sliced = plist[1:3]
    assert isinstance(sliced, nn.ParameterList) and len(sliced) == 2 and sliced[0] is plist[1]
    plist[0] = tensor.full((2,), 5.0)
    assert isinstance(plist[0], nn.Parameter) and plist[0].shape == (2,)
    model = nn.Module()
    model.params = plist
    assert len(list(model.parameters())) == 4
    theirs = torch.nn.ParameterList([torch.nn.Parameter(torch.ones(2, 3)), torch.zeros(4)])
    ours = nn.ParameterList([nn.Parameter(tensor.ones(2, 3)), tensor.zeros(4)])
    assert repr(ours) == repr(theirs).replace("torch.", "tensor.")


def test_parameter_dict():
    pdict = nn.ParameterDict(OrderedDict([("w", tensor.ones(2)), ("b", nn.Parameter(tensor.zeros(1)))]))
    assert list(pdict) == ["w", "b"] and isinstance(pdict["w"], nn.Parameter)
    assert [n for n, _ in pdict.named_parameters()] == ["w", "b"]
    assert isinstance(pdict.pop("w"), nn.Parameter) and list(pdict.keys()) == ["b"]


@pytest.mark.parametrize("call, error, message", [
    (lambda: _mlp()[3], IndexError, "index 3 is out of range"),
    (lambda: _mlp()[-4], IndexError, "index -4 is out of range"),
    (lambda: nn.ModuleList([nn.ReLU()])[1], IndexError, "index 1 is out of range"),
    (lambda: nn.ModuleList(nn.ReLU()), TypeError, "ModuleList.extend should be called with an iterable, but got ReLU"),
    (lambda: nn.ModuleList([1]), TypeError, "int is not a Module subclass"),
    (lambda: nn.ModuleDict(5), TypeError, "ModuleDict.update should be called with an iterable"),
    (lambda: nn.ModuleDict([("a", nn.ReLU(), 1)]), ValueError, "element #0 has length 3; 2 is required"),
    (lambda: nn.ParameterList(tensor.ones(2)), TypeError, "ParameterList.extend should be called with an iterable"),
    (lambda: nn.ParameterList([tensor.ones(2)])(), RuntimeError, "ParameterList should not be called."),
    (lambda: _mlp() + nn.ModuleList(), ValueError, "add operator supports only objects of Sequential class"),
    (lambda: nn.Sequential(nn.ReLU())["0"], TypeError, "'str' object cannot be interpreted as an integer"),
])
def test_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_parameter_dict_sorts_a_plain_dict_as_torch(torch):
    ours = nn.ParameterDict({"b": tensor.ones(1), "a": tensor.ones(2)})
    theirs = torch.nn.ParameterDict({"b": torch.ones(1), "a": torch.ones(2)})
    assert list(ours) == list(theirs) == ["a", "b"]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert list(nn.ParameterDict([("b", tensor.ones(1)), ("a", tensor.ones(1))])) == ["b", "a"]


def test_parameter_dict_dict_api():
    pdict = nn.ParameterDict(OrderedDict([("b", tensor.ones(1)), ("a", tensor.ones(2))]))
    assert pdict.get("missing", 5) == 5 and pdict.get("a") is pdict["a"]
    assert list(reversed(pdict)) == ["a", "b"]
    assert isinstance(pdict.setdefault("c", tensor.zeros(1)), nn.Parameter) and list(pdict) == ["b", "a", "c"]
    key, value = pdict.popitem()
    assert key == "c" and isinstance(value, nn.Parameter) and list(pdict) == ["b", "a"]
    assert list(pdict.fromkeys(["x", "y"], tensor.ones(1))) == ["x", "y"]
    copied = pdict.copy()
    assert list(copied) == ["b", "a"] and copied["a"] is pdict["a"]
    assert list(pdict | {"z": tensor.ones(1), "c": tensor.ones(1)}) == ["b", "a", "c", "z"]
    copied |= {"q": tensor.ones(1)}
    assert list(copied) == ["b", "a", "q"]
    copied.clear()
    assert len(copied) == 0 and list(copied.parameters()) == []
    with pytest.raises(TypeError, match="cannot be used as a key as it is not a string"):
        pdict[1]
    with pytest.raises(KeyError):
        nn.ParameterDict().popitem()


def test_sequential_times_int():
    relu, tanh = nn.ReLU(), nn.Tanh()
    seq = nn.Sequential(relu, tanh)
    for repeated in (seq * 2, 2 * seq):
        assert list(repeated._modules) == ["0", "1", "2", "3"] and repeated[2] is relu
    seq *= 3
    assert len(seq) == 6 and seq[5] is tanh
    with pytest.raises(ValueError, match="Non-positive multiplication factor 0"):
        seq * 0
    with pytest.raises(TypeError, match="unsupported operand type"):
        seq * 1.5
