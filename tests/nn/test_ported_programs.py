"""The shapes of well-known PyTorch example programs, written once against a ``lib`` namespace
and run with torch and with ours (only the imports differ): a GPT-style decoder with RMSNorm,
AdamW and OneCycleLR; a seq2seq ``nn.Transformer`` with Adam and label smoothing; a DCGAN
generator/discriminator step (ConvTranspose2d, BatchNorm2d); a VAE. Losses and parameters must
agree after a few training steps."""

from __future__ import annotations

import types

import numpy as np
import pytest

import nn
import tensor
from tests.helpers import assert_close


def _ours():
    return types.SimpleNamespace(nn=nn, F=nn.functional, optim=nn.optim, tensor=tensor.tensor, lib=tensor)


def _theirs(torch):
    return types.SimpleNamespace(nn=torch.nn, F=torch.nn.functional, optim=torch.optim, tensor=torch.tensor, lib=torch)


class GPT:
    """Token + position embeddings, causal self-attention blocks (pre-norm RMSNorm), tied head."""

    @staticmethod
    def build(lib):
        class Block(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.norm1, self.norm2 = lib.nn.RMSNorm(16), lib.nn.RMSNorm(16)
                self.attn = lib.nn.MultiheadAttention(16, 2, batch_first=True, bias=False)
                self.mlp = lib.nn.Sequential(
                    lib.nn.Linear(16, 32), lib.nn.GELU(approximate="tanh"), lib.nn.Linear(32, 16)
                )

            def forward(self, x, mask):
                h = self.norm1(x)
                x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
                return x + self.mlp(self.norm2(x))

        class Model(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.tok, self.pos = lib.nn.Embedding(32, 16), lib.nn.Embedding(8, 16)
                self.blocks = lib.nn.ModuleList([Block(), Block()])
                self.norm = lib.nn.RMSNorm(16)
                self.head = lib.nn.Linear(16, 32, bias=False)
                self.head.weight = self.tok.weight

            def forward(self, idx):
                t = idx.shape[1]
                x = self.tok(idx) + self.pos(lib.lib.arange(t))
                mask = lib.nn.Transformer.generate_square_subsequent_mask(t)
                for block in self.blocks:
                    x = block(x, mask)
                return self.head(self.norm(x))

        return Model()

    @staticmethod
    def train(lib, model, steps):
        rng = np.random.default_rng(1)
        opt = lib.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
        sched = lib.optim.lr_scheduler.OneCycleLR(opt, max_lr=2e-2, total_steps=steps)
        losses = []
        for _ in range(steps):
            idx = lib.tensor(rng.integers(0, 32, (3, 8)))
            logits = model(idx[:, :-1])
            loss = lib.F.cross_entropy(logits.reshape(-1, 32), idx[:, 1:].reshape(-1))
            opt.zero_grad()
            loss.backward()
            lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            losses.append(loss.item())
        return losses


class Seq2Seq:
    """``nn.Transformer`` translating token sequences, with label smoothing and SGD with momentum
    (Adam would turn the round-off in near-zero gradients into lr-sized differences)."""

    @staticmethod
    def build(lib):
        class Model(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.src, self.tgt = lib.nn.Embedding(20, 16), lib.nn.Embedding(20, 16)
                self.transformer = lib.nn.Transformer(16, 2, 1, 1, dim_feedforward=32, dropout=0.0)
                self.out = lib.nn.Linear(16, 20)

            def forward(self, src, tgt):
                mask = lib.nn.Transformer.generate_square_subsequent_mask(tgt.shape[0])
                return self.out(self.transformer(self.src(src), self.tgt(tgt), tgt_mask=mask))

        return Model()

    @staticmethod
    def train(lib, model, steps):
        rng = np.random.default_rng(2)
        opt = lib.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        losses = []
        for _ in range(steps):
            src, tgt = lib.tensor(rng.integers(0, 20, (6, 2))), lib.tensor(rng.integers(0, 20, (5, 2)))
            logits = model(src, tgt[:-1])
            loss = lib.F.cross_entropy(logits.reshape(-1, 20), tgt[1:].reshape(-1), label_smoothing=0.1)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses


class DCGAN:
    """A generator (ConvTranspose2d + BatchNorm2d) and a discriminator, one Adam step each."""

    @staticmethod
    def build(lib):
        generator = lib.nn.Sequential(
            lib.nn.ConvTranspose2d(8, 16, 4, 1, 0, bias=False),
            lib.nn.BatchNorm2d(16),
            lib.nn.ReLU(True),
            lib.nn.ConvTranspose2d(16, 1, 4, 2, 1, bias=False),
            lib.nn.Tanh(),
        )
        discriminator = lib.nn.Sequential(
            lib.nn.Conv2d(1, 8, 4, 2, 1, bias=False),
            lib.nn.LeakyReLU(0.2, inplace=True),
            lib.nn.Conv2d(8, 1, 4, 1, 0, bias=False),
            lib.nn.Flatten(),
            lib.nn.Sigmoid(),
        )
        return lib.nn.ModuleDict({"g": generator, "d": discriminator})

    @staticmethod
    def train(lib, model, steps):
        rng = np.random.default_rng(3)
        opt_g = lib.optim.Adam(model["g"].parameters(), lr=2e-3, betas=(0.5, 0.999))
        opt_d = lib.optim.Adam(model["d"].parameters(), lr=2e-3, betas=(0.5, 0.999))
        losses = []
        for _ in range(steps):
            real = lib.tensor(rng.uniform(-1, 1, (4, 1, 8, 8)).astype("float32"))
            noise = lib.tensor(rng.standard_normal((4, 8, 1, 1)).astype("float32"))
            fake = model["g"](noise)
            ones, zeros = lib.lib.ones(4, 1), lib.lib.zeros(4, 1)
            loss_d = lib.F.binary_cross_entropy(model["d"](real), ones) + lib.F.binary_cross_entropy(
                model["d"](fake.detach()), zeros
            )
            opt_d.zero_grad()
            loss_d.backward()
            opt_d.step()
            loss_g = lib.F.binary_cross_entropy(model["d"](fake), ones)
            opt_g.zero_grad()
            loss_g.backward()
            opt_g.step()
            losses += [loss_d.item(), loss_g.item()]
        return losses


class VAE:
    """An MLP variational autoencoder with the reparametrisation trick (noise given)."""

    @staticmethod
    def build(lib):
        class Model(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.enc = lib.nn.Linear(12, 16)
                self.mu, self.logvar = lib.nn.Linear(16, 3), lib.nn.Linear(16, 3)
                self.dec = lib.nn.Sequential(lib.nn.Linear(3, 16), lib.nn.SiLU(), lib.nn.Linear(16, 12))

            def forward(self, x, eps):
                h = lib.F.relu(self.enc(x))
                mu, logvar = self.mu(h), self.logvar(h)
                z = mu + eps * (0.5 * logvar).exp()
                return lib.lib.sigmoid(self.dec(z)), mu, logvar

        return Model()

    @staticmethod
    def train(lib, model, steps):
        rng = np.random.default_rng(4)
        opt = lib.optim.RAdam(model.parameters(), lr=1e-2)
        losses = []
        for _ in range(steps):
            x = lib.tensor(rng.uniform(0, 1, (5, 12)).astype("float32"))
            eps = lib.tensor(rng.standard_normal((5, 3)).astype("float32"))
            recon, mu, logvar = model(x, eps)
            kld = -0.5 * (1 + logvar - mu * mu - logvar.exp()).sum()
            loss = lib.F.binary_cross_entropy(recon, x, reduction="sum") + kld
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses


@pytest.mark.slow
@pytest.mark.parametrize("program", [GPT, Seq2Seq, DCGAN, VAE], ids=lambda p: p.__name__)
def test_program_trains_like_torch(program, torch):
    torch.manual_seed(0)
    ours_lib, theirs_lib = _ours(), _theirs(torch)
    theirs, ours = program.build(theirs_lib), program.build(ours_lib)
    state = {k: tensor.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()}
    ours.load_state_dict(state)
    ours_losses, theirs_losses = program.train(ours_lib, ours, 3), program.train(theirs_lib, theirs, 3)
    np.testing.assert_allclose(ours_losses, theirs_losses, rtol=2e-4, atol=1e-5)
    for name, value in theirs.state_dict().items():
        assert_close(ours.state_dict()[name], value.detach().numpy(), rtol=2e-3, atol=2e-4)
