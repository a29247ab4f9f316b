"""Stored runs read back: each record checked against the schema and the
cell that claims it, placement classified, collected into one table.
"""
