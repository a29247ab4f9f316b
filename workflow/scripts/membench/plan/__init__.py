"""Planning: the config grammar and its checks, cells and the request each
repetition makes, the variant table with every family trait, rounds and
the figures an experiment gets. What common.smk imports: never the
measurement, analysis or plotting code.
"""
