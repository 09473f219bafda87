"""A variational autoencoder shaped as pytorch/examples' ``vae/main.py``: a 2-layer MLP encoder
to ``mu``/``logvar``, the reparameterisation trick with ``randn_like``, a sigmoid decoder,
BCE (summed) + KL divergence, Adam, a test pass and sampling from the prior. The images are
small synthetic binary-ish patterns in [0, 1] (8 x 8 instead of MNIST's 28 x 28).

``main(argv, on_model)`` returns the training losses (per sample) and each epoch's test loss;
``on_model(model)`` is called with the freshly built model.
"""

import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset

PIXELS = 64


class VAE(nn.Module):
    def __init__(self):
        super().__init__()

        self.fc1 = nn.Linear(PIXELS, 32)
        self.fc21 = nn.Linear(32, 4)
        self.fc22 = nn.Linear(32, 4)
        self.fc3 = nn.Linear(4, 32)
        self.fc4 = nn.Linear(32, PIXELS)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, PIXELS))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


# Reconstruction + KL divergence losses summed over all elements and batch
def loss_function(recon_x, x, mu, logvar):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, PIXELS), reduction="sum")

    # see Appendix B from VAE paper:
    # Kingma and Welling. Auto-Encoding Variational Bayes. ICLR, 2014
    # https://arxiv.org/abs/1312.6114
    # 0.5 * sum(1 + log(sigma^2) - mu^2 - sigma^2)
    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())

    return BCE + KLD


def synthetic_images(count, seed):
    """``count`` 8 x 8 images in [0, 1]: one of four fixed patterns, blurred by noise."""
    patterns = np.random.default_rng(0).uniform(size=(4, 1, 8, 8)) > 0.5
    rng = np.random.default_rng(seed)
    images = np.clip(patterns[rng.integers(0, 4, count)] + rng.normal(0.0, 0.2, (count, 1, 8, 8)), 0.0, 1.0)
    return TensorDataset(torch.from_numpy(images.astype(np.float32)), torch.zeros(count, dtype=torch.long))


def train(args, model, device, train_loader, optimizer, epoch):
    model.train()
    train_loss = 0
    losses = []
    for batch_idx, (data, _) in enumerate(train_loader):
        data = data.to(device)
        optimizer.zero_grad()
        recon_batch, mu, logvar = model(data)
        loss = loss_function(recon_batch, data, mu, logvar)
        loss.backward()
        train_loss += loss.item()
        optimizer.step()
        losses.append(loss.item() / len(data))
        if batch_idx % args.log_interval == 0:
            print(
                f"Train Epoch: {epoch} [{batch_idx * len(data)}/{len(train_loader.dataset)} "
                f"({100.0 * batch_idx / len(train_loader):.0f}%)]\tLoss: {loss.item() / len(data):.6f}"
            )

    print(f"====> Epoch: {epoch} Average loss: {train_loss / len(train_loader.dataset):.4f}")
    return losses


def test(model, device, test_loader, epoch):
    model.eval()
    test_loss = 0
    with torch.no_grad():
        for i, (data, _) in enumerate(test_loader):
            data = data.to(device)
            recon_batch, mu, logvar = model(data)
            test_loss += loss_function(recon_batch, data, mu, logvar).item()
            if i == 0:
                n = min(data.size(0), 8)
                comparison = torch.cat([data[:n], recon_batch.view(data.size(0), 1, 8, 8)[:n]])
                print("reconstructions:", tuple(comparison.shape))

    test_loss /= len(test_loader.dataset)
    print(f"====> Test set loss: {test_loss:.4f}")
    return test_loss


def main(argv=None, on_model=None):
    parser = argparse.ArgumentParser(description="VAE Example (synthetic images)")
    parser.add_argument("--batch-size", type=int, default=32, metavar="N", help="input batch size for training")
    parser.add_argument("--epochs", type=int, default=2, metavar="N", help="number of epochs to train")
    parser.add_argument("--no-accel", action="store_true", help="disables accelerator")
    parser.add_argument("--seed", type=int, default=1, metavar="S", help="random seed")
    parser.add_argument("--log-interval", type=int, default=2, metavar="N", help="batches between logs")
    args = parser.parse_args(argv)

    use_accel = not args.no_accel and torch.accelerator.is_available()

    torch.manual_seed(args.seed)

    if use_accel:
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")

    kwargs = {"num_workers": 1, "pin_memory": True} if use_accel else {}
    train_loader = DataLoader(synthetic_images(192, 1), batch_size=args.batch_size, shuffle=False, **kwargs)
    test_loader = DataLoader(synthetic_images(64, 2), batch_size=args.batch_size, shuffle=False, **kwargs)

    model = VAE().to(device)
    if on_model is not None:
        on_model(model)
    optimizer = optim.Adam(model.parameters(), lr=1e-2)

    losses = []
    for epoch in range(1, args.epochs + 1):
        losses += train(args, model, device, train_loader, optimizer, epoch)
        losses.append(test(model, device, test_loader, epoch))
        with torch.no_grad():
            sample = torch.randn(16, 4).to(device)
            sample = model.decode(sample).cpu()
            print("samples:", tuple(sample.view(16, 1, 8, 8).shape), f"mean {sample.mean().item():.4f}")
    return losses


if __name__ == "__main__":
    main()
