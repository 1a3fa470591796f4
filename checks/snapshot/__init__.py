"""Recorded exports of torch's libraries: reading, writing, the shipped snapshots, the command line."""
