"""Two result sets: matching cells, the statistics of a verdict, differing
conditions, and the terminal, CSV, JSON and HTML outputs.
"""
