"""Damages a file the way a crash or a bad disk would.

usage: damage.py flip PATH OFFSET   (xor one byte)
       damage.py truncate PATH SIZE"""
import sys

how, path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = bytearray(open(path, "rb").read())
if how == "flip":
    data[n] ^= 0xFF
elif how == "truncate":
    data = data[:n]
else:
    sys.exit("unknown damage " + how)
open(path, "wb").write(data)
