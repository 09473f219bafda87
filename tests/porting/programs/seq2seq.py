"""A sequence-to-sequence ``nn.Transformer`` shaped as the PyTorch tutorial "Language Translation
with nn.Transformer and torchtext": token embeddings scaled by sqrt(d), a sinusoidal
``PositionalEncoding`` buffer, ``Seq2SeqTransformer`` (encoder, decoder, generator), the
tutorial's float causal mask and boolean padding masks, ``pad_sequence`` in a ``collate_fn``,
Xavier init, Adam with betas (0.9, 0.98), ``CrossEntropyLoss(ignore_index=PAD_IDX)``, an
evaluation pass and greedy decoding. The "translation" is synthetic: the target is the source
reversed and shifted by a constant, in sentences of varying length (sequence-first layout). The
tutorial's ``torch.nn.CrossEntropyLoss`` and ``torch.optim.Adam`` are spelled
``nn.CrossEntropyLoss`` and ``optim.Adam`` here (see ``gpt.py``).

``main(argv, on_model)`` returns the training losses and each epoch's validation loss;
``on_model(model)`` is called with the freshly built model.
"""

import argparse
import math

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim
from torch import Tensor
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader

PAD_IDX, BOS_IDX, EOS_IDX = 0, 1, 2
VOCAB = 20  # ids 3..VOCAB-1 are words
DEVICE = torch.device("cpu")


# helper Module that adds positional encoding to the token embedding to introduce a notion of word order.
class PositionalEncoding(nn.Module):
    def __init__(self, emb_size: int, dropout: float, maxlen: int = 64):
        super().__init__()
        den = torch.exp(-torch.arange(0, emb_size, 2) * math.log(10000) / emb_size)
        pos = torch.arange(0, maxlen).reshape(maxlen, 1)
        pos_embedding = torch.zeros((maxlen, emb_size))
        pos_embedding[:, 0::2] = torch.sin(pos * den)
        pos_embedding[:, 1::2] = torch.cos(pos * den)
        pos_embedding = pos_embedding.unsqueeze(-2)

        self.dropout = nn.Dropout(dropout)
        self.register_buffer("pos_embedding", pos_embedding)

    def forward(self, token_embedding: Tensor):
        return self.dropout(token_embedding + self.pos_embedding[: token_embedding.size(0), :])


# helper Module to convert tensor of input indices into corresponding tensor of token embeddings
class TokenEmbedding(nn.Module):
    def __init__(self, vocab_size: int, emb_size):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, emb_size)
        self.emb_size = emb_size

    def forward(self, tokens: Tensor):
        return self.embedding(tokens.long()) * math.sqrt(self.emb_size)


# Seq2Seq Network
class Seq2SeqTransformer(nn.Module):
    def __init__(
        self,
        num_encoder_layers: int,
        num_decoder_layers: int,
        emb_size: int,
        nhead: int,
        src_vocab_size: int,
        tgt_vocab_size: int,
        dim_feedforward: int = 512,
        dropout: float = 0.1,
    ):
        super().__init__()
        self.transformer = nn.Transformer(
            d_model=emb_size,
            nhead=nhead,
            num_encoder_layers=num_encoder_layers,
            num_decoder_layers=num_decoder_layers,
            dim_feedforward=dim_feedforward,
            dropout=dropout,
        )
        self.generator = nn.Linear(emb_size, tgt_vocab_size)
        self.src_tok_emb = TokenEmbedding(src_vocab_size, emb_size)
        self.tgt_tok_emb = TokenEmbedding(tgt_vocab_size, emb_size)
        self.positional_encoding = PositionalEncoding(emb_size, dropout=dropout)

    def forward(
        self,
        src: Tensor,
        trg: Tensor,
        src_mask: Tensor,
        tgt_mask: Tensor,
        src_padding_mask: Tensor,
        tgt_padding_mask: Tensor,
        memory_key_padding_mask: Tensor,
    ):
        src_emb = self.positional_encoding(self.src_tok_emb(src))
        tgt_emb = self.positional_encoding(self.tgt_tok_emb(trg))
        outs = self.transformer(
            src_emb, tgt_emb, src_mask, tgt_mask, None, src_padding_mask, tgt_padding_mask, memory_key_padding_mask
        )
        return self.generator(outs)

    def encode(self, src: Tensor, src_mask: Tensor):
        return self.transformer.encoder(self.positional_encoding(self.src_tok_emb(src)), src_mask)

    def decode(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor):
        return self.transformer.decoder(self.positional_encoding(self.tgt_tok_emb(tgt)), memory, tgt_mask)


def generate_square_subsequent_mask(sz):
    mask = (torch.triu(torch.ones((sz, sz), device=DEVICE)) == 1).transpose(0, 1)
    mask = mask.float().masked_fill(mask == 0, float("-inf")).masked_fill(mask == 1, 0.0)
    return mask


def create_mask(src, tgt):
    src_seq_len = src.shape[0]
    tgt_seq_len = tgt.shape[0]

    tgt_mask = generate_square_subsequent_mask(tgt_seq_len)
    src_mask = torch.zeros((src_seq_len, src_seq_len), device=DEVICE).type(torch.bool)

    src_padding_mask = (src == PAD_IDX).transpose(0, 1)
    tgt_padding_mask = (tgt == PAD_IDX).transpose(0, 1)
    return src_mask, tgt_mask, src_padding_mask, tgt_padding_mask


def synthetic_pairs(count, seed):
    """(source, target) sentences of 3-8 words: the target is the source reversed, ids shifted."""
    rng = np.random.default_rng(seed)
    pairs = []
    for _ in range(count):
        words = rng.integers(3, VOCAB, rng.integers(3, 9))
        target = (words[::-1] - 3 + 5) % (VOCAB - 3) + 3
        pairs.append((words.tolist(), target.tolist()))
    return pairs


# function to collate data samples into batch tensors
def collate_fn(batch):
    src_batch, tgt_batch = [], []
    for src_sample, tgt_sample in batch:
        src_batch.append(torch.tensor([BOS_IDX] + src_sample + [EOS_IDX]))
        tgt_batch.append(torch.tensor([BOS_IDX] + tgt_sample + [EOS_IDX]))

    src_batch = pad_sequence(src_batch, padding_value=PAD_IDX)
    tgt_batch = pad_sequence(tgt_batch, padding_value=PAD_IDX)
    return src_batch, tgt_batch


def train_epoch(model, optimizer, loss_fn, batch_size):
    model.train()
    losses = []
    train_dataloader = DataLoader(synthetic_pairs(128, 1), batch_size=batch_size, collate_fn=collate_fn)

    for src, tgt in train_dataloader:
        src = src.to(DEVICE)
        tgt = tgt.to(DEVICE)

        tgt_input = tgt[:-1, :]

        src_mask, tgt_mask, src_padding_mask, tgt_padding_mask = create_mask(src, tgt_input)

        logits = model(src, tgt_input, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask, src_padding_mask)

        optimizer.zero_grad()

        tgt_out = tgt[1:, :]
        loss = loss_fn(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1))
        loss.backward()

        optimizer.step()
        losses.append(loss.item())

    return losses


def evaluate(model, loss_fn, batch_size):
    model.eval()
    losses = 0

    val_dataloader = DataLoader(synthetic_pairs(32, 2), batch_size=batch_size, collate_fn=collate_fn)

    for src, tgt in val_dataloader:
        src = src.to(DEVICE)
        tgt = tgt.to(DEVICE)

        tgt_input = tgt[:-1, :]

        src_mask, tgt_mask, src_padding_mask, tgt_padding_mask = create_mask(src, tgt_input)

        logits = model(src, tgt_input, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask, src_padding_mask)

        tgt_out = tgt[1:, :]
        loss = loss_fn(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1))
        losses += loss.item()

    return losses / len(list(val_dataloader))


# function to generate output sequence using greedy algorithm
def greedy_decode(model, src, src_mask, max_len, start_symbol):
    src = src.to(DEVICE)
    src_mask = src_mask.to(DEVICE)

    memory = model.encode(src, src_mask)
    ys = torch.ones(1, 1).fill_(start_symbol).type(torch.long).to(DEVICE)
    for i in range(max_len - 1):
        memory = memory.to(DEVICE)
        tgt_mask = (generate_square_subsequent_mask(ys.size(0)).type(torch.bool)).to(DEVICE)
        out = model.decode(ys, memory, tgt_mask)
        out = out.transpose(0, 1)
        prob = model.generator(out[:, -1])
        _, next_word = torch.max(prob, dim=1)
        next_word = next_word.item()

        ys = torch.cat([ys, torch.ones(1, 1).type_as(src.data).fill_(next_word)], dim=0)
        if next_word == EOS_IDX:
            break
    return ys


def main(argv=None, on_model=None):
    parser = argparse.ArgumentParser(description="seq2seq nn.Transformer (synthetic translation)")
    parser.add_argument("--emb_size", type=int, default=16)
    parser.add_argument("--nhead", type=int, default=2)
    parser.add_argument("--ffn_hid_dim", type=int, default=32)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--num_layers", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args(argv)

    torch.manual_seed(0)

    transformer = Seq2SeqTransformer(
        args.num_layers, args.num_layers, args.emb_size, args.nhead, VOCAB, VOCAB, args.ffn_hid_dim
    )

    for p in transformer.parameters():
        if p.dim() > 1:
            nn.init.xavier_uniform_(p)

    transformer = transformer.to(DEVICE)
    if on_model is not None:
        on_model(transformer)

    loss_fn = nn.CrossEntropyLoss(ignore_index=PAD_IDX)

    optimizer = optim.Adam(transformer.parameters(), lr=1e-3, betas=(0.9, 0.98), eps=1e-9)

    losses = []
    for epoch in range(1, args.epochs + 1):
        losses += train_epoch(transformer, optimizer, loss_fn, args.batch_size)
        val_loss = evaluate(transformer, loss_fn, args.batch_size)
        losses.append(val_loss)
        print(f"Epoch: {epoch}, Train loss: {losses[-2]:.3f}, Val loss: {val_loss:.3f}")

    src_words, _ = synthetic_pairs(1, 3)[0]
    src = torch.tensor([BOS_IDX] + src_words + [EOS_IDX]).view(-1, 1)
    num_tokens = src.shape[0]
    src_mask = (torch.zeros(num_tokens, num_tokens)).type(torch.bool)
    tgt_tokens = greedy_decode(transformer, src, src_mask, max_len=num_tokens + 5, start_symbol=BOS_IDX).flatten()
    print("source:", src_words, "greedy translation:", tgt_tokens.tolist())
    return losses


if __name__ == "__main__":
    main()
