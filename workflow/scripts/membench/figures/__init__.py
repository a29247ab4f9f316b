"""One module per figure kind; plot.py dispatches on the kind. Loaded by
the plot rule only.
"""
