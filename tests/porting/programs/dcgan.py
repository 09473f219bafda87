"""A DCGAN shaped as pytorch/examples' ``dcgan/main.py``: a generator of ``ConvTranspose2d`` +
``BatchNorm2d`` + ReLU layers ending in Tanh, a discriminator of strided convolutions +
``BatchNorm2d`` + LeakyReLU ending in Sigmoid, ``weights_init`` applied by class name, BCE, Adam
with beta1 = 0.5, and the alternating D / G updates with ``label.fill_``. Images are 16 x 16
synthetic blobs in [-1, 1] (instead of 64 x 64 photos), so the nets have three layers each.

``main(argv, on_model)`` returns Loss_D and Loss_G of every iteration; ``on_model`` is called
with the generator, then the discriminator.
"""

import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset


# custom weights initialization called on netG and netD
def weights_init(m):
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        nn.init.normal_(m.weight, 0.0, 0.02)
    elif classname.find("BatchNorm") != -1:
        nn.init.normal_(m.weight, 1.0, 0.02)
        nn.init.zeros_(m.bias)


class Generator(nn.Module):
    def __init__(self, nz, ngf, nc):
        super().__init__()
        self.main = nn.Sequential(
            # input is Z, going into a convolution
            nn.ConvTranspose2d(nz, ngf * 4, 4, 1, 0, bias=False),
            nn.BatchNorm2d(ngf * 4),
            nn.ReLU(True),
            # state size. (ngf*4) x 4 x 4
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            # state size. (ngf*2) x 8 x 8
            nn.ConvTranspose2d(ngf * 2, nc, 4, 2, 1, bias=False),
            nn.Tanh(),
            # state size. (nc) x 16 x 16
        )

    def forward(self, input):
        return self.main(input)


class Discriminator(nn.Module):
    def __init__(self, nc, ndf):
        super().__init__()
        self.main = nn.Sequential(
            # input is (nc) x 16 x 16
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
            # state size. (ndf) x 8 x 8
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            # state size. (ndf*2) x 4 x 4
            nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False),
            nn.Sigmoid(),
        )

    def forward(self, input):
        output = self.main(input)
        return output.view(-1, 1).squeeze(1)


def synthetic_images(count, seed):
    """``count`` 1 x 16 x 16 images in [-1, 1]: a Gaussian blob at a random place."""
    rng = np.random.default_rng(seed)
    grid = np.arange(16.0)
    cy, cx = rng.uniform(4, 12, (2, count, 1, 1))
    blob = np.exp(-((grid[:, None] - cy) ** 2 + (grid[None, :] - cx) ** 2) / 8.0)
    return TensorDataset(torch.from_numpy((2.0 * blob - 1.0)[:, None].astype(np.float32)))


def main(argv=None, on_model=None):
    parser = argparse.ArgumentParser(description="DCGAN (synthetic images)")
    parser.add_argument("--batchSize", type=int, default=16, help="input batch size")
    parser.add_argument("--nz", type=int, default=8, help="size of the latent z vector")
    parser.add_argument("--ngf", type=int, default=8)
    parser.add_argument("--ndf", type=int, default=8)
    parser.add_argument("--niter", type=int, default=2, help="number of epochs to train for")
    parser.add_argument("--lr", type=float, default=0.0002, help="learning rate, default=0.0002")
    parser.add_argument("--beta1", type=float, default=0.5, help="beta1 for adam. default=0.5")
    parser.add_argument("--accel", action="store_true", help="enables accelerator")
    parser.add_argument("--manualSeed", type=int, default=999, help="manual seed")
    opt = parser.parse_args(argv)
    print(opt)

    torch.manual_seed(opt.manualSeed)
    torch.backends.cudnn.benchmark = True

    if opt.accel and torch.accelerator.is_available():
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")
    print(f"Using device: {device}")

    dataset = synthetic_images(64, 1)
    nc = 1
    dataloader = DataLoader(dataset, batch_size=opt.batchSize, shuffle=False)

    nz, ngf, ndf = opt.nz, opt.ngf, opt.ndf
    netG = Generator(nz, ngf, nc).to(device)
    netG.apply(weights_init)
    print(netG)
    netD = Discriminator(nc, ndf).to(device)
    netD.apply(weights_init)
    print(netD)
    if on_model is not None:
        on_model(netG)
        on_model(netD)

    criterion = nn.BCELoss()

    fixed_noise = torch.randn(opt.batchSize, nz, 1, 1, device=device)
    real_label = 1
    fake_label = 0

    # setup optimizer
    optimizerD = optim.Adam(netD.parameters(), lr=opt.lr, betas=(opt.beta1, 0.999))
    optimizerG = optim.Adam(netG.parameters(), lr=opt.lr, betas=(opt.beta1, 0.999))

    losses = []
    for epoch in range(opt.niter):
        for i, data in enumerate(dataloader, 0):
            ############################
            # (1) Update D network: maximize log(D(x)) + log(1 - D(G(z)))
            ###########################
            # train with real
            netD.zero_grad()
            real_cpu = data[0].to(device)
            batch_size = real_cpu.size(0)
            label = torch.full((batch_size,), real_label, dtype=real_cpu.dtype, device=device)

            output = netD(real_cpu)
            errD_real = criterion(output, label)
            errD_real.backward()
            D_x = output.mean().item()

            # train with fake
            noise = torch.randn(batch_size, nz, 1, 1, device=device)
            fake = netG(noise)
            label.fill_(fake_label)
            output = netD(fake.detach())
            errD_fake = criterion(output, label)
            errD_fake.backward()
            D_G_z1 = output.mean().item()
            errD = errD_real + errD_fake
            optimizerD.step()

            ############################
            # (2) Update G network: maximize log(D(G(z)))
            ###########################
            netG.zero_grad()
            label.fill_(real_label)  # fake labels are real for generator cost
            output = netD(fake)
            errG = criterion(output, label)
            errG.backward()
            D_G_z2 = output.mean().item()
            optimizerG.step()

            print(
                f"[{epoch}/{opt.niter}][{i}/{len(dataloader)}] Loss_D: {errD.item():.4f} Loss_G: {errG.item():.4f} "
                f"D(x): {D_x:.4f} D(G(z)): {D_G_z1:.4f} / {D_G_z2:.4f}"
            )
            losses += [errD.item(), errG.item()]

        fake = netG(fixed_noise)
        print("fake samples:", tuple(fake.detach().shape))
    return losses


if __name__ == "__main__":
    main()
