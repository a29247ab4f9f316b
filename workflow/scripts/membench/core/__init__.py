"""The ground floor: where membench's files are, the results layout, atomic
files, the record schema and its migration, one text formatter. Imports
nothing of membench.
"""
