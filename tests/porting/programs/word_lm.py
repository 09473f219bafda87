"""A word-level language model shaped as pytorch/examples' ``word_language_model``
(``data.py``'s Dictionary/Corpus, ``model.py``'s RNNModel with dropout and tied weights,
``main.py``'s training with gradient clipping, a hand-written SGD update on ``p.data`` and
learning-rate annealing), trained on variable-length sentences instead of a flat stream: each
batch is padded by ``pad_sequence`` in a ``collate_fn``, packed with ``pack_padded_sequence``
(unsorted lengths) for the LSTM and unpacked with ``pad_packed_sequence``; the padding is left
out of the loss by ``ignore_index``. The corpus is synthetic sentences from a tiny grammar.

``main(argv, on_model)`` returns the training losses and each epoch's validation loss;
``on_model(model)`` is called with the freshly built model.
"""

import argparse
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence
from torch.utils.data import DataLoader

SUBJECTS = ["the cat", "a dog", "my friend", "the old man", "she", "he"]
VERBS = ["sees", "likes", "eats", "finds", "wants"]
OBJECTS = ["the ball", "a red apple", "some bread", "the big house", "it"]
ENDINGS = ["today", "again", "in the morning", "with joy", ""]


class Dictionary:
    def __init__(self):
        self.word2idx = {}
        self.idx2word = []

    def add_word(self, word):
        if word not in self.word2idx:
            self.idx2word.append(word)
            self.word2idx[word] = len(self.idx2word) - 1
        return self.word2idx[word]

    def __len__(self):
        return len(self.idx2word)


class Corpus:
    """Sentences of the synthetic grammar, tokenised; index 0 is the padding token."""

    def __init__(self, seed):
        self.dictionary = Dictionary()
        self.pad = self.dictionary.add_word("<pad>")
        rng = np.random.default_rng(seed)
        self.train = self.tokenize(self.sentences(rng, 192))
        self.valid = self.tokenize(self.sentences(rng, 48))

    @staticmethod
    def sentences(rng, count):
        pick = lambda words: words[rng.integers(len(words))]  # noqa: E731
        return [" ".join([pick(SUBJECTS), pick(VERBS), pick(OBJECTS), pick(ENDINGS)]).split() for _ in range(count)]

    def tokenize(self, sentences):
        """Each sentence, with <eos> added, as an int64 tensor of word ids."""
        ids = []
        for words in sentences:
            words = words + ["<eos>"]
            ids.append(torch.tensor([self.dictionary.add_word(word) for word in words]).type(torch.int64))
        return ids


class RNNModel(nn.Module):
    """Container module with an encoder, a recurrent module, and a decoder."""

    def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.5, tie_weights=False):
        super().__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        if rnn_type in ["LSTM", "GRU"]:
            self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout, batch_first=True)
        else:
            try:
                nonlinearity = {"RNN_TANH": "tanh", "RNN_RELU": "relu"}[rnn_type]
            except KeyError as e:
                raise ValueError(
                    """An invalid option for `--model` was supplied,
                                 options are ['LSTM', 'GRU', 'RNN_TANH' or 'RNN_RELU']"""
                ) from e
            self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity=nonlinearity, dropout=dropout, batch_first=True)
        self.decoder = nn.Linear(nhid, ntoken)

        # "Using the Output Embedding to Improve Language Models" (Press & Wolf 2016)
        if tie_weights:
            if nhid != ninp:
                raise ValueError("When using the tied flag, nhid must be equal to emsize")
            self.decoder.weight = self.encoder.weight

        self.init_weights()

        self.rnn_type = rnn_type
        self.nhid = nhid
        self.nlayers = nlayers

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, input, lengths, hidden):
        emb = self.drop(self.encoder(input))
        packed = pack_padded_sequence(emb, lengths, batch_first=True, enforce_sorted=False)
        output, hidden = self.rnn(packed, hidden)
        output, _ = pad_packed_sequence(output, batch_first=True, total_length=input.size(1))
        output = self.drop(output)
        decoded = self.decoder(output)
        decoded = decoded.view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        if self.rnn_type == "LSTM":
            return (weight.new_zeros(self.nlayers, bsz, self.nhid), weight.new_zeros(self.nlayers, bsz, self.nhid))
        else:
            return weight.new_zeros(self.nlayers, bsz, self.nhid)


def main(argv=None, on_model=None):
    parser = argparse.ArgumentParser(description="PyTorch RNN/LSTM Language Model (packed sentences)")
    parser.add_argument("--model", type=str, default="LSTM", help="type of network (RNN_TANH, RNN_RELU, LSTM, GRU)")
    parser.add_argument("--emsize", type=int, default=16, help="size of word embeddings")
    parser.add_argument("--nhid", type=int, default=16, help="number of hidden units per layer")
    parser.add_argument("--nlayers", type=int, default=2, help="number of layers")
    parser.add_argument("--lr", type=float, default=5.0, help="initial learning rate")
    parser.add_argument("--clip", type=float, default=0.25, help="gradient clipping")
    parser.add_argument("--epochs", type=int, default=2, help="upper epoch limit")
    parser.add_argument("--batch_size", type=int, default=16, metavar="N", help="batch size")
    parser.add_argument("--dropout", type=float, default=0.2, help="dropout applied to layers (0 = no dropout)")
    parser.add_argument("--tied", action="store_true", default=True, help="tie the word embedding and softmax weights")
    parser.add_argument("--seed", type=int, default=1111, help="random seed")
    parser.add_argument("--log-interval", type=int, default=4, metavar="N", help="report interval")
    args = parser.parse_args(argv)

    # Set the random seed manually for reproducibility.
    torch.manual_seed(args.seed)
    device = torch.device("cpu")

    ###############################################################################
    # Load data
    ###############################################################################

    corpus = Corpus(seed=0)
    pad = corpus.pad

    def collate(batch):
        lengths = torch.tensor([len(sentence) - 1 for sentence in batch])
        padded = pad_sequence(batch, batch_first=True, padding_value=pad)
        return padded[:, :-1], padded[:, 1:], lengths

    train_loader = DataLoader(corpus.train, batch_size=args.batch_size, collate_fn=collate)
    val_loader = DataLoader(corpus.valid, batch_size=args.batch_size, collate_fn=collate)

    ###############################################################################
    # Build the model
    ###############################################################################

    ntokens = len(corpus.dictionary)
    model = RNNModel(args.model, ntokens, args.emsize, args.nhid, args.nlayers, args.dropout, args.tied).to(device)
    if on_model is not None:
        on_model(model)
    criterion = nn.NLLLoss(ignore_index=pad)

    ###############################################################################
    # Training code
    ###############################################################################

    def evaluate(loader):
        # Turn on evaluation mode which disables dropout.
        model.eval()
        total_loss = 0.0
        total_words = 0
        with torch.no_grad():
            for data, targets, lengths in loader:
                hidden = model.init_hidden(data.size(0))
                output, hidden = model(data.to(device), lengths, hidden)
                words = int(lengths.sum())
                total_loss += words * criterion(output, targets.reshape(-1).to(device)).item()
                total_words += words
        return total_loss / total_words

    def train(lr):
        # Turn on training mode which enables dropout.
        model.train()
        losses = []
        for batch, (data, targets, lengths) in enumerate(train_loader):
            hidden = model.init_hidden(data.size(0))
            model.zero_grad()
            output, hidden = model(data.to(device), lengths, hidden)
            loss = criterion(output, targets.reshape(-1).to(device))
            loss.backward()

            # `clip_grad_norm` helps prevent the exploding gradient problem in RNNs / LSTMs.
            nn.utils.clip_grad_norm_(model.parameters(), args.clip)
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-lr)

            losses.append(loss.item())
            if batch % args.log_interval == 0:
                print(
                    f"| epoch {epoch:3d} | {batch:5d}/{len(train_loader):5d} batches | lr {lr:02.2f} | "
                    f"loss {loss.item():5.2f} | ppl {math.exp(loss.item()):8.2f}"
                )
        return losses

    # Loop over epochs.
    lr = args.lr
    best_val_loss = None
    losses = []
    for epoch in range(1, args.epochs + 1):
        losses += train(lr)
        val_loss = evaluate(val_loader)
        print("-" * 89)
        print(f"| end of epoch {epoch:3d} | valid loss {val_loss:5.2f} | valid ppl {math.exp(val_loss):8.2f}")
        print("-" * 89)
        losses.append(val_loss)
        if not best_val_loss or val_loss < best_val_loss:
            best_val_loss = val_loss
        else:
            # Anneal the learning rate if no improvement has been seen in the validation dataset.
            lr /= 4.0
    return losses


if __name__ == "__main__":
    main()
