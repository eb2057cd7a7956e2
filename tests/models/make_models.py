#!/usr/bin/python3
"""Make the real-model test zoo of ipu-exec: PyTorch modules exported to ONNX,
with PyTorch's own outputs as the reference.

Layout written (the ONNX test-data layout, as the ONNX backend suite and
onnxruntime's onnx_test_runner use):

    OUT/NAME/model.onnx
    OUT/NAME/test_data_set_0/input_N.pb    onnx.TensorProto
    OUT/NAME/test_data_set_0/output_N.pb   reference outputs computed by PyTorch

Weights are random but seeded (nothing can be downloaded here), so the files
are the same on every run. The architectures and tensor sizes are the real
ones. BatchNorm running statistics are calibrated on a random probe batch so
the activations of deep networks keep a sensible scale instead of decaying to
~0 (where every output would compare equal to every other).

Vision models: torchvision (Debian's python3-torchvision), 3x224x224 input.
Dense prediction: decoder_tiny, a small encoder-decoder written here
(transposed convolutions, 3x64x64 input).
Text models: a GPT-2 style decoder and a BERT style encoder written here,
int64 token ids input; "tiny" configs for CI, "small" ones of GPT-2-small /
BERT-base size (12 layers, dim 768).

Usage: make_models.py OUT [NAME ...] [--batch N] [--opset K] [--force]
       make_models.py --list
Exit status: 0 ok, 2 bad usage, 77 when torch/torchvision/onnx are missing.
"""
import argparse
import inspect
import math
import os
import shutil
import sys
import time

try:
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    import onnx
    from onnx import numpy_helper
except ImportError as e:  # the test scripts turn 77 into an automake SKIP
    print(f"make_models.py: {e} in {sys.executable}; Debian's python3-torch, python3-onnx and "
          f"python3-numpy install into /usr/bin/python3: run it with that (a `python3` on PATH may "
          f"be another interpreter, e.g. a virtual environment's)", file=sys.stderr)
    sys.exit(77)


# --------------------------------------------------------------------------
# Text models
# --------------------------------------------------------------------------

class DecoderBlock(nn.Module):
    """Pre-LayerNorm causal self-attention + GELU MLP (GPT-2 block)."""

    def __init__(self, dim, heads, ctx):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.ln_1 = nn.LayerNorm(dim)
        self.c_attn = nn.Linear(dim, 3 * dim)
        self.c_proj = nn.Linear(dim, dim)
        self.ln_2 = nn.LayerNorm(dim)
        self.c_fc = nn.Linear(dim, 4 * dim)
        self.mlp_proj = nn.Linear(4 * dim, dim)
        causal = torch.tril(torch.ones(ctx, ctx, dtype=torch.bool))
        self.register_buffer("causal", causal.view(1, 1, ctx, ctx), persistent=False)

    def attention(self, x):
        b, t, c = x.shape
        hd = self.head_dim
        q, k, v = self.c_attn(x).split(c, dim=2)
        q = q.view(b, t, self.heads, hd).transpose(1, 2)
        k = k.view(b, t, self.heads, hd).transpose(1, 2)
        v = v.view(b, t, self.heads, hd).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(hd)
        scores = scores.masked_fill(~self.causal[:, :, :t, :t], float("-inf"))
        y = torch.matmul(scores.softmax(dim=-1), v)
        return self.c_proj(y.transpose(1, 2).reshape(b, t, c))

    def forward(self, x):
        x = x + self.attention(self.ln_1(x))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x))))


class GPT2(nn.Module):
    """Token + learned position embeddings, N decoder blocks, final LayerNorm,
    LM head tied to the token embedding. Output: logits [B, T, vocab]."""

    def __init__(self, vocab, ctx, layers, dim, heads):
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(ctx, dim)
        self.h = nn.ModuleList([DecoderBlock(dim, heads, ctx) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, input_ids):
        pos = torch.arange(input_ids.shape[1], dtype=torch.int64).unsqueeze(0)
        x = self.wte(input_ids) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


class EncoderLayer(nn.TransformerEncoderLayer):
    """nn.TransformerEncoderLayer whose self-attention asks for its weights:
    torch 2's multi_head_attention_forward then computes softmax(QK^T)V with
    bmm and softmax, as torch 1.13 always did (the same ONNX graph: the
    weights are not used), instead of scaled_dot_product_attention, which
    the TorchScript exporter has only from opset 14."""

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal=False):
        x = self.self_attn(x, x, x, attn_mask=attn_mask,
                           key_padding_mask=key_padding_mask,
                           need_weights=True)[0]
        return self.dropout1(x)


class BERT(nn.Module):
    """BERT-style encoder: embeddings + LayerNorm, torch.nn.TransformerEncoder
    (post-LN, GELU), tanh pooler on the first token.
    Outputs: last hidden state [B, T, dim] and pooled [B, dim]."""

    def __init__(self, vocab, ctx, layers, dim, heads):
        super().__init__()
        self.word = nn.Embedding(vocab, dim)
        self.position = nn.Embedding(ctx, dim)
        self.emb_norm = nn.LayerNorm(dim)
        layer = EncoderLayer(dim, heads, 4 * dim, dropout=0.0,
                             activation="gelu", batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.pooler = nn.Linear(dim, dim)

    def forward(self, input_ids):
        pos = torch.arange(input_ids.shape[1], dtype=torch.int64).unsqueeze(0)
        h = self.encoder(self.emb_norm(self.word(input_ids) + self.position(pos)))
        return h, torch.tanh(self.pooler(h[:, 0]))


def init_text(model):
    """Distinct seeded weights for every layer (TransformerEncoder clones its
    layer, so all layers would start identical), GPT-2-like scales."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() > 1:
                p.normal_(0.0, 0.02)
            elif "norm" in name or "ln" in name:
                if name.endswith("weight"):
                    p.uniform_(0.8, 1.2)
                else:
                    p.uniform_(-0.1, 0.1)
            else:
                p.uniform_(-0.05, 0.05)
    return model


def text_model(cls, seq, **cfg):
    def make(batch):
        model = init_text(cls(**cfg))
        ids = torch.randint(0, cfg["vocab"], (batch, seq), dtype=torch.int64)
        outs = ["logits"] if cls is GPT2 else ["last_hidden_state", "pooled"]
        return model, (ids,), ["input_ids"], outs
    return make


# --------------------------------------------------------------------------
# Vision models
# --------------------------------------------------------------------------

def calibrate_batchnorm(model, probe):
    """Set BatchNorm running statistics from one forward pass over probe.

    Only the BatchNorm layers are put in training mode (dropout and stochastic
    depth stay off), with momentum None so the running estimates are the plain
    average over the pass. Affine parameters are randomised a little so they
    are not the identity.
    """
    model.eval()
    bns = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    with torch.no_grad():
        for bn in bns:
            bn.reset_running_stats()
            bn.momentum = None
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.uniform_(-0.2, 0.2)
            bn.train()
        model(probe)
    model.eval()
    return model


def vision_model(name):
    def make(batch):
        import torchvision
        model = getattr(torchvision.models, name)(weights=None)
        calibrate_batchnorm(model, torch.randn(max(batch, 8), 3, 224, 224))
        x = torch.randn(batch, 3, 224, 224)
        return model, (x,), ["input"], ["logits"]
    return make


class Decoder(nn.Module):
    """A small encoder-decoder for dense prediction: strided convolutions
    down, transposed convolutions up (stride 2 with output_padding, grouped,
    dilated; 3-D over the stack of the features as a depth axis) with skip
    connections, per-pixel class scores out."""

    def __init__(self, classes=5):
        super().__init__()
        def block(cin, cout, stride):
            return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False),
                                 nn.BatchNorm2d(cout), nn.ReLU())
        self.down1, self.down2, self.down3 = block(3, 16, 2), block(16, 32, 2), block(32, 64, 2)
        self.up3 = nn.ConvTranspose2d(64, 32, 3, 2, 1, output_padding=1)
        self.up2 = nn.ConvTranspose2d(32, 16, 4, 2, 1, groups=4)
        self.up1 = nn.ConvTranspose2d(16, 16, 3, 2, 2, output_padding=1, dilation=2)
        self.depth = nn.ConvTranspose3d(1, 2, 3, 2, 1, output_padding=1)
        self.head = nn.Conv2d(16 + 2 * 32, classes, 1)

    def forward(self, x):
        d1 = self.down1(x)
        d2 = self.down2(d1)
        d3 = self.down3(d2)
        u2 = torch.relu(self.up3(d3)) + d2
        u1 = torch.relu(self.up2(u2)) + d1
        u0 = torch.relu(self.up1(u1))
        # the 16 channels of u1 as a depth axis: [N, 1, 16, H, W] -> [N, 2, 32, 2H, 2W]
        z = self.depth(u1.unsqueeze(1)).flatten(1, 2)
        return self.head(torch.cat([u0, z], 1))


def decoder_model():
    def make(batch):
        model = calibrate_batchnorm(Decoder(), torch.randn(max(batch, 8), 3, 64, 64))
        x = torch.randn(batch, 3, 64, 64)
        return model, (x,), ["input"], ["scores"]
    return make


class PoolChain(nn.Module):
    """Pools between convolutions, whose activations ipu-exec keeps in
    oneDNN's layouts through them: ceil-mode MaxPool, a pool output that a
    convolution reads both as its input and as its fused residual,
    AveragePool with and without count_include_pad under ceil_mode (once
    with a window overhanging the end padding), a dilated MaxPool and the
    global average."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 32, 3, padding=1)
        self.c2 = nn.Conv2d(32, 32, 3, padding=1)
        self.c3 = nn.Conv2d(32, 64, 1)
        self.c4 = nn.Conv2d(64, 64, 3, padding=1)
        self.c5 = nn.Conv2d(64, 64, 3, padding=1)

    def forward(self, x):
        y = F.max_pool2d(F.relu(self.c1(x)), 3, 2, ceil_mode=True)
        y = F.relu(self.c2(y) + y)
        y = F.avg_pool2d(y, 3, 2, padding=1, ceil_mode=True, count_include_pad=False)
        y = F.relu(self.c3(y))
        y = F.avg_pool2d(y, 3, 2, padding=1, ceil_mode=True, count_include_pad=True)
        y = F.relu(self.c4(y))
        y = F.max_pool2d(y, 2, 1, dilation=2)
        return F.adaptive_avg_pool2d(self.c5(y), 1).flatten(1)


def pool_chain(batch):
    return PoolChain(), (torch.randn(batch, 3, 61, 61),), ["input"], ["logits"]


VISION = ["resnet18", "resnet50", "mobilenet_v2", "squeezenet1_1",
          "densenet121", "efficientnet_b0", "vgg16"]

ZOO = {name: vision_model(name) for name in VISION}
ZOO.update({
    "pool_chain": pool_chain,
    "gpt2_tiny": text_model(GPT2, 32, vocab=1024, ctx=64, layers=4, dim=128, heads=4),
    "gpt2_small": text_model(GPT2, 128, vocab=50257, ctx=1024, layers=12, dim=768, heads=12),
    "bert_tiny": text_model(BERT, 32, vocab=1024, ctx=64, layers=4, dim=128, heads=4),
    "bert_small": text_model(BERT, 128, vocab=30522, ctx=512, layers=12, dim=768, heads=12),
    "decoder_tiny": decoder_model(),
})


# --------------------------------------------------------------------------
# Export
# --------------------------------------------------------------------------

# The TorchScript exporter, which gives the opset-K graphs the tests expect:
# torch >= 2.9 defaults to the dynamo exporter (dynamo=True), older torch has
# no such keyword.
TORCHSCRIPT_EXPORTER = ({"dynamo": False}
                        if "dynamo" in inspect.signature(torch.onnx.export).parameters else {})


def write_tensor(path, array, name):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(np.ascontiguousarray(array), name).SerializeToString())


def is_complete(d, config):
    try:
        with open(os.path.join(d, ".complete")) as f:
            return f.read() == config
    except OSError:
        return False


def export(name, out, batch, opset, force):
    d = os.path.join(out, name)
    config = f"{name} batch={batch} opset={opset}\n"
    if not force and is_complete(d, config):
        print(f"{name}: up to date in {d}")
        return
    t0 = time.time()
    torch.manual_seed(0)
    model, args, in_names, out_names = ZOO[name](batch)
    model.eval()
    with torch.no_grad():
        ref = model(*args)
    ref = ref if isinstance(ref, tuple) else (ref,)

    # Written into a private folder, then renamed into place, so that a
    # reader (or a second make_models.py) never sees a half-written model.
    tmp = f"{d}.tmp{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    data = os.path.join(tmp, "test_data_set_0")
    os.makedirs(data)
    path = os.path.join(tmp, "model.onnx")
    # Exported with autograd enabled: the fused inference fast path of
    # nn.TransformerEncoderLayer (taken under no_grad) has no ONNX symbolic.
    torch.onnx.export(model, args, path, opset_version=opset,
                      input_names=in_names, output_names=out_names,
                      do_constant_folding=True, **TORCHSCRIPT_EXPORTER)
    onnx.checker.check_model(path)
    for i, a in enumerate(args):
        write_tensor(os.path.join(data, f"input_{i}.pb"), a.numpy(), in_names[i])
    stds = []
    for i, r in enumerate(ref):
        r = r.detach().numpy().astype(np.float32)
        if not np.isfinite(r).all():
            shutil.rmtree(tmp)
            sys.exit(f"make_models.py: {name}: reference output {i} is not finite")
        stds.append(float(r.std()))
        write_tensor(os.path.join(data, f"output_{i}.pb"), r, out_names[i])
    if min(stds) < 1e-3:
        shutil.rmtree(tmp)
        sys.exit(f"make_models.py: {name}: degenerate reference output (std {min(stds):.3g})")
    with open(os.path.join(tmp, ".complete"), "w") as f:
        f.write(config)
    shutil.rmtree(d, ignore_errors=True)
    try:
        os.rename(tmp, d)
    except OSError:  # another make_models.py got there first
        shutil.rmtree(tmp)
        if not is_complete(d, config):
            raise
    params = sum(p.numel() for p in model.parameters())
    print(f"{name}: {params / 1e6:.1f}M params, opset {opset}, batch {batch}, "
          f"output std {', '.join(f'{s:.3g}' for s in stds)}, "
          f"{time.time() - t0:.1f}s -> {d}")


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", nargs="?", help="output folder")
    p.add_argument("names", nargs="*", help="models to make (default: all)")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--opset", type=int, default=13)
    p.add_argument("--force", action="store_true", help="remake models already made")
    p.add_argument("--list", action="store_true", help="print the model names")
    a = p.parse_intermixed_args()
    if a.list:
        print("\n".join(ZOO))
        return 0
    if not a.out:
        p.print_usage(sys.stderr)
        return 2
    if a.batch < 1 or not 7 <= a.opset <= 17:
        print("make_models.py: --batch must be >= 1 and --opset in 7..17", file=sys.stderr)
        return 2
    bad = [n for n in a.names if n not in ZOO]
    if bad:
        print(f"make_models.py: unknown model {' '.join(bad)}; --list shows the zoo",
              file=sys.stderr)
        return 2
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    for n in a.names or ZOO:
        export(n, a.out, a.batch, a.opset, a.force)
    return 0


if __name__ == "__main__":
    sys.exit(main())
