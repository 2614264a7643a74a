"""arrayjit.torch: AOTAutograd's aten graphs run through arrayjit. The four
models train 50 steps against torch eager: each step's loss and gradients
(with the same weights) within 1e-5 relative, one trace per graph and
replays after; unsupported ops fall back to torch with one warning."""
import copy
import warnings

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("functorch")

import arrayjit as aj  # noqa: E402
import arrayjit.torch as ajt  # noqa: E402
from torch_models import MODELS, batch  # noqa: E402


@pytest.mark.parametrize("name", sorted(MODELS))
def test_models_train_as_eager(name):
    torch.manual_seed(0)
    eager = MODELS[name]()
    ours = copy.deepcopy(eager)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback, no other warning
        compiled = ajt.compile(ours)
        o1 = torch.optim.SGD(eager.parameters(), lr=0.1)
        o2 = torch.optim.SGD(ours.parameters(), lr=0.1)
        aj.reset_stats()
        for step in range(50):
            args = batch(name, step)
            ours.load_state_dict(eager.state_dict())  # the same weights: this step's error alone
            o1.zero_grad()
            o2.zero_grad()
            l1 = eager(*args)
            l1.backward()
            l2 = compiled(*args)
            l2.backward()
            assert abs(l1.item() - l2.item()) <= 1e-5 * abs(l1.item()), (step, l1.item(), l2.item())
            scale = max(p.grad.abs().max().item() for p in eager.parameters())
            for (pname, p1), p2 in zip(eager.named_parameters(), ours.parameters()):
                err = (p1.grad - p2.grad).abs().max().item()
                assert err <= 1e-5 * scale, (step, pname, err, scale)
            o1.step()
            o2.step()
    s = aj.stats()
    assert s["compiled_traces"] == 2 and s["compiled_replays"] == 2 * 49, s  # forward and backward graphs


def test_an_unsupported_op_runs_on_torch_with_one_warning():
    def f(x, w):
        return torch.cumprod(x * w, 0).sum()  # aten.cumprod: no translation

    x = torch.randn(5)
    w = torch.randn(5, requires_grad=True)
    cf = ajt.compile(f)
    with pytest.warns(UserWarning, match="cumprod"):
        out = cf(x, w)
    out.backward()
    w2 = w.detach().clone().requires_grad_()
    f(x, w2).backward()
    assert torch.allclose(out, f(x, w2)) and torch.allclose(w.grad, w2.grad)
    assert "aten.cumprod.default" not in ajt.SUPPORTED


def test_supported_list_covers_what_the_models_produce():
    seen = set()

    def record(gm, example_inputs):
        for n in gm.graph.nodes:
            if n.op == "call_function":
                seen.add(str(n.target))
        return gm

    from functorch.compile import aot_module
    for name, make in MODELS.items():
        torch.manual_seed(0)
        m = aot_module(make(), fw_compiler=record, bw_compiler=record)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m(*batch(name, 0)).backward()
    missing = sorted(s for s in seen if s.startswith("aten.") and s not in ajt.SUPPORTED)
    assert not missing, missing
    assert len(ajt.SUPPORTED) > 150


def test_torch2_backend_where_torch2_is_installed():
    if not hasattr(torch, "compile"):
        pytest.skip("torch %s has no torch.compile (torch >= 2.0 registers arrayjit.torch.backend)"
                    % torch.__version__)
    m = MODELS["mlp"]()
    cm = torch.compile(copy.deepcopy(m), backend=ajt.backend)
    args = batch("mlp", 0)
    assert torch.allclose(cm(*args), m(*args), rtol=1e-5)


def test_dropout_in_a_compiled_graph_draws_a_new_mask_every_step():
    from torch_models import Block
    torch.manual_seed(0)
    m = Block(dropout=0.5)
    eager = copy.deepcopy(m)
    m.train()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cm = ajt.compile(m)
        args = batch("block", 0)
        aj.reset_stats()
        losses = []
        for _ in range(4):
            loss = cm(*args)
            loss.backward()
            losses.append(loss.item())
    assert len(set(losses)) == 4  # the same batch and weights: only the mask differs
    s = aj.stats()
    assert s["compiled_traces"] == 2 and s["compiled_replays"] == 6, s
    # Reproducible from torch's seed, as eager dropout is.
    torch.manual_seed(123)
    a = cm(*args).item()
    torch.manual_seed(123)
    assert cm(*args).item() == a
    # In eval mode dropout is the identity: arrayjit and eager agree.
    m.eval()
    eager.load_state_dict(m.state_dict())
    eager.eval()
    assert abs(ajt.compile(m)(*args).item() - eager(*args).item()) < 1e-5


def test_coverage_list_in_docs_is_the_table():
    import os
    root = os.environ.get("ARRAYJIT_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), os.pardir, os.pardir)
    path = os.path.join(root, "docs", "python.md")
    text = open(path).read()
    begin, end = "<!-- aten coverage begin -->\n", "<!-- aten coverage end -->"
    head, rest = text.split(begin)
    _, tail = rest.split(end)
    ops = [s[len("aten."):] for s in ajt.SUPPORTED]
    listed = "%d aten ops:\n\n%s\n" % (len(ops), "\n".join("- `%s`" % o for o in ops))
    if os.environ.get("ARRAYJIT_WRITE_DOCS") == "1":
        open(path, "w").write(head + begin + listed + end + tail)
        return
    assert rest.split(end)[0] == listed, "docs/python.md's aten list is stale: rerun with ARRAYJIT_WRITE_DOCS=1"


def test_parameters_are_imported_once_and_read_where_they_lie():
    """A graph call keeps each parameter's import (per input position) and
    reads it where it lies: torch's optimizer writes the weights in place
    and arrayjit sees the new values; a parameter given new memory
    (`p.data = ...`) is imported again."""
    from torch_models import MLP
    torch.manual_seed(0)
    ours = MLP(d_in=8, d_hidden=16, d_out=3)
    ref = copy.deepcopy(ours)
    compiled = ajt.compile(ours)
    o1 = torch.optim.SGD(ref.parameters(), lr=0.5)
    o2 = torch.optim.SGD(ours.parameters(), lr=0.5)
    imports = [0]
    real = ajt._import_handle

    def counted(t):
        imports[0] += 1
        return real(t)

    ajt._import_handle = counted
    per_step = []
    try:
        for step in range(6):
            if step == 3:
                for p, q in zip(ours.parameters(), ref.parameters()):
                    w = torch.randn_like(p)
                    p.data = w.clone()
                    q.data = w.clone()
            x, y = torch.randn(5, 8), torch.randint(0, 3, (5,))
            imports[0] = 0
            o1.zero_grad()
            o2.zero_grad()
            l1 = ref(x, y)
            l1.backward()
            l2 = compiled(x, y)
            l2.backward()
            per_step.append(imports[0])
            assert abs(l1.item() - l2.item()) <= 1e-5 * abs(l1.item()), (step, l1.item(), l2.item())
            for p1, p2 in zip(ref.parameters(), ours.parameters()):
                assert (p1.grad - p2.grad).abs().max().item() <= 1e-5 * p1.grad.abs().max().item() + 1e-7
            o1.step()
            o2.step()
    finally:
        ajt._import_handle = real
    # The first call and the first replay import every tensor (the replay
    # keeps the parameters'), later replays only the data and the labels;
    # step 3 gave every parameter new memory.
    n_params = len(list(ours.parameters()))
    c = per_step[2]
    assert per_step == [c + n_params, c + n_params, c, c + n_params, c, c], per_step
