"""Holds an exclusive lock on an SQLite database for a few seconds, as a
writer in the middle of a long transaction would: hold_lock.py DB READY SECONDS
(creates READY once the lock is held)."""
import sqlite3
import sys
import time

connection = sqlite3.connect(sys.argv[1], isolation_level=None)
connection.execute("PRAGMA locking_mode=EXCLUSIVE")
connection.execute("BEGIN EXCLUSIVE")
open(sys.argv[2], "w").close()
time.sleep(float(sys.argv[3]))
connection.execute("ROLLBACK")
