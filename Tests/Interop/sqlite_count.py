#!/usr/bin/env python3
"""Prints how many rows a table of a SQLite file has (read-only): sqlite_count.py FILE TABLE"""
import sqlite3, sys

connection = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
print(connection.execute(f'SELECT COUNT(*) FROM "{sys.argv[2]}"').fetchone()[0])
