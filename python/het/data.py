"""Data for het's executables: token files (``prepare``) and sample shards (``shard``).

    python -m het.data prepare --out DIR [--vocab-size N] [--val-fraction F]
                               [--glob PATTERN] [--limit-bytes B] PATH...

Trains a byte-level BPE tokenizer (Hugging Face ``tokenizers``, locally:
nothing is downloaded) on the text files under PATH (files, or folders
searched for PATTERN, default ``*.py``), encodes them in sorted path order
with an end-of-text token after each, and writes into DIR:

- ``train.bin`` and ``val.bin``: flat arrays of token ids (uint16 when the
  vocabulary fits, else uint32; the format nanoGPT's ``train.bin`` uses),
  the last ``F`` of the tokens (default 0.1) held out for validation;
- ``train.bin.json`` and ``val.bin.json``: their dtype, vocabulary size and
  token count, which compiled executables read (``--data DIR/train.bin``);
- ``tokenizer.json``: the tokenizer, to decode what a model generates.

It prints the files, bytes and tokens of each split. The corpus of the
examples is the Python standard library's own sources
(``/usr/lib/python3.11``, shipped by Debian's python3.11): real text of a
known size on every machine that runs het, with no download.

    python -m het.data shard DATA.npz --out DIR [--samples-per-shard N]

Splits a classifier's data set (arrays ``x`` [N, ...] and ``y`` [N], as
``--data F.npz`` takes it) into shards ``DIR/x-00000.npy`` (float32) and
``DIR/y-00000.npy`` (int64), N samples each (the last may be shorter), in
order. Executables take the folder as ``--data DIR`` and memory-map the
shards; a data set produced shard by shard elsewhere only has to follow
the same names (any key between ``x-``/``y-`` and ``.npy``, taken in sorted
order) and dtypes (float32 samples; int8/16/32/64 or uint8 labels).
"""
import argparse
import glob
import json
import os
import sys

import numpy as np

END_OF_TEXT = "<|endoftext|>"


def collect(paths, pattern, limit_bytes):
    files = []
    for path in paths:
        if os.path.isdir(path):
            files += glob.glob(os.path.join(path, "**", pattern), recursive=True)
        elif os.path.isfile(path):
            files.append(path)
        else:
            sys.exit(f"het.data prepare: {path}: no such file or folder")
    files = sorted(set(f for f in files if os.path.isfile(f)))
    if limit_bytes > 0:
        kept, total = [], 0
        for f in files:
            size = os.path.getsize(f)
            if total + size > limit_bytes and kept:
                break
            kept.append(f)
            total += size
        files = kept
    if not files:
        sys.exit(f"het.data prepare: no files matching {pattern} under {', '.join(paths)}")
    return files


def read_text(path):
    with open(path, "rb") as f:
        return f.read().decode("utf-8", errors="replace")


def prepare(args):
    from tokenizers import ByteLevelBPETokenizer

    files = collect(args.paths, args.glob, args.limit_bytes)
    texts = [read_text(f) for f in files]
    tokenizer = ByteLevelBPETokenizer()
    tokenizer.train_from_iterator(texts, vocab_size=args.vocab_size, min_frequency=2,
                                  special_tokens=[END_OF_TEXT], show_progress=False)
    vocab = tokenizer.get_vocab_size()
    eot = tokenizer.token_to_id(END_OF_TEXT)
    ids = []
    for encoding in tokenizer.encode_batch(texts):
        ids.extend(encoding.ids)
        ids.append(eot)
    dtype = np.uint16 if vocab <= 65536 else np.uint32
    tokens = np.asarray(ids, dtype=dtype)
    held_out = int(len(tokens) * args.val_fraction)
    splits = {"train": tokens[: len(tokens) - held_out], "val": tokens[len(tokens) - held_out:]}
    os.makedirs(args.out, exist_ok=True)
    tokenizer_path = os.path.join(args.out, "tokenizer.json")
    tokenizer.save(tokenizer_path)
    total_bytes = sum(os.path.getsize(f) for f in files)
    print(f"het.data prepare: {len(files)} files, {total_bytes} bytes -> {len(tokens)} tokens "
          f"({total_bytes / max(1, len(tokens)):.2f} bytes per token), vocabulary {vocab} "
          f"(byte-level BPE), {np.dtype(dtype).name} ids")
    for name, part in splits.items():
        path = os.path.join(args.out, f"{name}.bin")
        part.tofile(path)
        with open(path + ".json", "w") as f:
            json.dump({"dtype": np.dtype(dtype).name, "vocab_size": vocab, "tokens": int(len(part)),
                       "end_of_text": eot, "tokenizer": "tokenizer.json"}, f, indent=1)
            f.write("\n")
        print(f"het.data prepare: {path}: {len(part)} tokens")
    print(f"het.data prepare: {tokenizer_path}")


def shard(args):
    with np.load(args.data) as arrays:
        if "x" not in arrays or "y" not in arrays:
            sys.exit(f"het.data shard: {args.data}: a data set needs arrays 'x' and 'y'")
        x = np.ascontiguousarray(arrays["x"], dtype=np.float32)
        y = np.ascontiguousarray(arrays["y"], dtype=np.int64)
    if x.ndim < 1 or y.shape != (len(x),):
        sys.exit(f"het.data shard: {args.data}: y must hold one label per sample of x "
                 f"(x {x.shape}, y {y.shape})")
    os.makedirs(args.out, exist_ok=True)
    count = 0
    for count, begin in enumerate(range(0, len(x), args.samples_per_shard), start=1):
        end = begin + args.samples_per_shard
        np.save(os.path.join(args.out, f"x-{count - 1:05d}.npy"), x[begin:end])
        np.save(os.path.join(args.out, f"y-{count - 1:05d}.npy"), y[begin:end])
    print(f"het.data shard: {len(x)} samples of shape {list(x.shape[1:])} -> {count} shards "
          f"of at most {args.samples_per_shard} in {args.out}")


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m het.data", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    q = sub.add_parser("prepare", help="text files -> token files and their tokenizer")
    q.add_argument("paths", nargs="+", help="text files, or folders searched for --glob")
    q.add_argument("--out", required=True, help="folder for train.bin, val.bin, tokenizer.json")
    q.add_argument("--vocab-size", type=int, default=8192)
    q.add_argument("--val-fraction", type=float, default=0.1)
    q.add_argument("--glob", default="*.py", help="files to take from folders (default *.py)")
    q.add_argument("--limit-bytes", type=int, default=0,
                   help="stop adding files (in sorted order) past this many bytes (0: all)")
    r = sub.add_parser("shard", help="an .npz data set (x, y) -> .npy sample shards")
    r.add_argument("data", help="the .npz holding x [N, ...] and y [N]")
    r.add_argument("--out", required=True, help="folder for x-K.npy and y-K.npy")
    r.add_argument("--samples-per-shard", type=int, default=65536)
    args = p.parse_args(argv)
    if args.command == "shard":
        if args.samples_per_shard < 1:
            p.error("--samples-per-shard must be at least 1")
        shard(args)
        return
    if args.vocab_size < 257:
        p.error("--vocab-size must be at least 257 (the 256 bytes and the end-of-text token)")
    if not 0 <= args.val_fraction < 1:
        p.error("--val-fraction must be in [0, 1)")
    prepare(args)


if __name__ == "__main__":
    main()
