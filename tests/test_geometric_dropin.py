"""numsoft.torch.geometric.softmax, PyG's utils.softmax on numsoft's group kernels:
PyG's values, autograd (gradcheck), half precision, and its refusals."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
geometric = pytest.importorskip("numsoft.torch.geometric")


def _graph(seed=0, nodes=30, max_in=7):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(0, max_in + 1, nodes)
    ptr = np.concatenate(([0], np.cumsum(sizes)))
    index = np.repeat(np.arange(nodes), sizes)
    return rng, torch.from_numpy(ptr), torch.from_numpy(index), nodes


@pytest.mark.parametrize("heads", [None, 3])
def test_matches_pyg_with_index_and_ptr(heads):
    pyg_utils = pytest.importorskip("torch_geometric.utils")
    rng, ptr, index, nodes = _graph()
    edges = index.numel()
    src = torch.from_numpy(rng.normal(size=(edges, heads) if heads else edges) * 3)
    shuffle = torch.from_numpy(rng.permutation(edges))
    want = pyg_utils.softmax(src[shuffle], index[shuffle], num_nodes=nodes)
    got = geometric.softmax(src[shuffle], index[shuffle], num_nodes=nodes)
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(geometric.softmax(src, ptr=ptr), pyg_utils.softmax(src, ptr=ptr))


def test_gradcheck_index_ptr_and_dim():
    rng, ptr, index, nodes = _graph(1, nodes=6, max_in=4)
    edges = index.numel()
    src = torch.tensor(rng.normal(size=(edges, 2)), requires_grad=True)
    assert torch.autograd.gradcheck(lambda s: geometric.softmax(s, index, num_nodes=nodes), src)
    assert torch.autograd.gradcheck(lambda s: geometric.softmax(s, ptr=ptr), src)
    src_t = torch.tensor(rng.normal(size=(2, edges)), requires_grad=True)
    assert torch.autograd.gradcheck(lambda s: geometric.softmax(s, ptr=ptr, dim=-1), src_t)


def test_attention_layer_trains():
    # a GAT-style coefficient: softmax of scores over incoming edges, then aggregation
    rng, ptr, index, nodes = _graph(2)
    feats = torch.from_numpy(rng.normal(size=(index.numel(), 4)).astype(np.float32))
    w = torch.zeros(4, requires_grad=True)
    target = torch.from_numpy(rng.normal(size=(nodes, 4)).astype(np.float32))
    opt = torch.optim.SGD([w], lr=0.5)
    losses = []
    for _ in range(20):
        alpha = geometric.softmax(feats @ w, index, num_nodes=nodes)
        agg = torch.zeros(nodes, 4).index_add_(0, index, alpha[:, None] * feats)
        loss = ((agg - target) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_half_precision_is_computed_in_float32(dtype):
    _, ptr, index, nodes = _graph(3)
    src = torch.linspace(-3, 3, index.numel()).to(dtype).requires_grad_()
    y = geometric.softmax(src, index, num_nodes=nodes)
    assert y.dtype == dtype
    want = geometric.softmax(src.detach().float(), index, num_nodes=nodes)
    torch.testing.assert_close(y.float(), want, rtol=1e-2, atol=1e-3)
    y.sum().backward()
    assert src.grad.dtype == dtype


def test_refusals_name_the_argument():
    _, ptr, index, nodes = _graph(4)
    src = torch.ones(index.numel())
    with pytest.raises(NotImplementedError, match="give index or ptr"):
        geometric.softmax(src)
    with pytest.raises(TypeError, match="src: expected a floating-point tensor"):
        geometric.softmax(torch.ones(index.numel(), dtype=torch.int64), index)
    with pytest.raises(TypeError, match="src: expected a torch.Tensor"):
        geometric.softmax(np.ones(3), index)
    with pytest.raises(IndexError, match="dim: 2"):
        geometric.softmax(src, index, dim=2)
    with pytest.raises(ValueError, match="segment_ids must lie in"):
        geometric.softmax(src, index, num_nodes=1)
